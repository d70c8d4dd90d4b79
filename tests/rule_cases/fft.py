"""Rows for np.fft: every transform with n / s, axes and norm, of real inputs and of complex ones
(z = x + iy), complex results as their real and imaginary parts."""

import numpy as np

from . import Case, r
from .complex_values import of_z, parts

_XY = (0, 1)
_Z = (r(4, 6), r(4, 6))
_Z3 = (r(3, 4, 5), r(3, 4, 5))

CASES = [
    Case("np.fft.fft", of_z(np.fft.fft), _Z, wrt=_XY, id="fft"),
    Case("np.fft.fft", lambda x: parts(np.fft.fft(x * x, n=9, axis=0, norm="ortho")), (r(4, 3),), id="fft-pad-ortho"),
    Case("np.fft.fft", of_z(lambda z: np.fft.fft(z, n=4, norm="forward")), _Z, wrt=_XY, id="fft-crop-forward"),
    Case("np.fft.ifft", of_z(np.fft.ifft), _Z, wrt=_XY, id="ifft"),
    Case("np.fft.ifft", of_z(lambda z: np.fft.ifft(z * z, n=7, axis=0, norm="backward")), _Z, wrt=_XY,
         id="ifft-pad-axis0"),
    Case("np.fft.fft2", of_z(np.fft.fft2), _Z, wrt=_XY, id="fft2"),
    Case("np.fft.ifft2", of_z(lambda z: np.fft.ifft2(z, s=(3, 8), norm="ortho")), _Z, wrt=_XY, id="ifft2-s"),
    Case("np.fft.fftn", of_z(lambda z: np.fft.fftn(z, axes=(0, 2))), _Z3, wrt=_XY, id="fftn-axes"),
    Case("np.fft.ifftn", of_z(lambda z: np.fft.ifftn(z, s=(5, 3), axes=(1, 2))), _Z3, wrt=_XY, id="ifftn-s"),
    Case("np.fft.rfft", lambda x: parts(np.fft.rfft(x)), (r(4, 6),), id="rfft"),
    Case("np.fft.rfft", lambda x: parts(np.fft.rfft(x * x, n=7, axis=0, norm="ortho")), (r(4, 6),), id="rfft-odd-n"),
    Case("np.fft.irfft", of_z(np.fft.irfft), _Z, wrt=_XY, id="irfft"),
    Case("np.fft.irfft", of_z(lambda z: np.fft.irfft(z * z, n=7, norm="forward")), _Z, wrt=_XY, id="irfft-odd-n"),
    Case("np.fft.irfft", of_z(lambda z: np.fft.irfft(z, n=14, axis=0, norm="ortho")), _Z, wrt=_XY, id="irfft-pad"),
    Case("np.fft.rfft2", lambda x: parts(np.fft.rfft2(x, s=(3, 8))), (r(4, 6),), id="rfft2-s"),
    Case("np.fft.irfft2", of_z(np.fft.irfft2), _Z, wrt=_XY, id="irfft2"),
    Case("np.fft.rfftn", lambda x: parts(np.fft.rfftn(x, axes=(2, 0), norm="forward")), (r(3, 4, 5),), id="rfftn-axes"),
    Case("np.fft.irfftn", of_z(lambda z: np.fft.irfftn(z, s=(4, 4, 9), axes=(0, 1, 2))), _Z3, wrt=_XY, id="irfftn-s"),
    Case("np.fft.hfft", of_z(lambda z: np.fft.hfft(z, n=9)), _Z, wrt=_XY, id="hfft"),
    Case("np.fft.ihfft", lambda x: parts(np.fft.ihfft(x * x, norm="ortho")), (r(4, 6),), id="ihfft"),
    Case("np.fft.fftshift", of_z(lambda z: np.fft.fftshift(z) * z), (r(3, 5), r(3, 5)), wrt=_XY, id="fftshift"),
    Case("np.fft.ifftshift", lambda x: np.fft.ifftshift(x, axes=1) * x, (r(3, 5),), id="ifftshift"),
    # a spectral derivative: real in, complex inside, real out, to third order
    Case("np.fft.irfft", lambda u: np.fft.irfft(1j * np.fft.rfftfreq(8, 1 / 8) * np.fft.rfft(u ** 3), 8), (r(8),),
         order=3, id="spectral-derivative"),
    # a cotangent that depends on u reaches both transposes (rfft's and irfft's), whose own rules the
    # second and third orders then take
    Case("np.fft.irfft", lambda u: np.fft.irfft(np.fft.rfft(u) ** 2, 7, norm="ortho") ** 2, (r(6),), order=3,
         id="transposes-of-traced-cotangents"),
    Case("np.fft.irfftn", lambda x: np.fft.irfftn(np.fft.rfftn(x, s=(3, 8), axes=(0, 1)) ** 2, s=(4, 6), axes=(0, 1)) ** 2, (r(4, 6),),
         id="transposes-of-traced-cotangents-2d"),
]
