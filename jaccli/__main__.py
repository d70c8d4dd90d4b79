"""`python -m jaccli`: the same command line as the `jaccli` executable."""

from .cli.main import main

if __name__ == "__main__":
    main()
