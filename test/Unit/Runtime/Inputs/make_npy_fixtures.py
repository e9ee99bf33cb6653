#!/usr/bin/env python3
"""Writes the .npy fixtures that NpyTest.cpp reads: files made by numpy itself,
so the reader is checked against the real format, not against our writer.
Run with a Python that has numpy (Debian: /usr/bin/python3) from this folder;
the expected values are repeated in NpyTest.cpp."""
import numpy as np

np.save("numpy_f4_2x3.npy", np.arange(6, dtype="<f4").reshape(2, 3) * 0.5 - 1)
np.save("numpy_f8_scalar.npy", np.array(3.25, dtype="<f8"))
np.save("numpy_i8_4.npy", np.array([-2, 0, 7, 1 << 40], dtype="<i8"))
np.save("numpy_i4_2x2.npy", np.array([[1, -2], [3, 2147483647]], dtype="<i4"))
np.save("numpy_b1_3.npy", np.array([True, False, True]))
np.save("numpy_f2_3.npy", np.array([1.0, -0.5, 65504.0], dtype="<f2"))
np.save("numpy_f4_fortran_2x3.npy",
        np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)))
