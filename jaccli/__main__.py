"""`python -m jaccli`: the same command line as the `jaccli` executable."""

from jaccli.cli import main

if __name__ == "__main__":
    main()
