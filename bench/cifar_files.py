"""Writes CIFAR-100-format files of random pixels into a folder (W2's data for MixLab:
the step time does not depend on what the pixels are, and CIFAR itself cannot be
downloaded on the device). Usage: cifar_files.py FOLDER"""
import os
import sys

# CIFAR-100 binary records: coarse label, fine label, 3072 pixel bytes (CHW).
for name, n in (("train.bin", 20000), ("test.bin", 1000)):
    rec = bytearray(os.urandom(n * 3074))
    for i in range(n):
        rec[i * 3074] = rec[i * 3074] % 20
        rec[i * 3074 + 1] = rec[i * 3074 + 1] % 100
    open(os.path.join(sys.argv[1], name), "wb").write(rec)
