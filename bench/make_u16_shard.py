#!/usr/bin/env python3
"""Writes a text's bytes as uint16 token shards, for `fa-run train --data-format u16`.

Every byte becomes one uint16 token (0..255), so a run on these shards with
`--vocab 256` sees the same tokens as `--data-format bytes` on the text.
Files written (OUT is a path prefix):

  OUT.raw.bin        nanoGPT's format: little-endian uint16 tokens, no header
  OUT.llmc.bin       llm.c's format: 256 int32 header (magic 20240520,
                     version 1, token count), then the tokens
  OUT.train.bin      with --val-fraction F: the first tokens, raw ...
  OUT.val.bin        ... and the last floor(n * F), raw, as fa-run's own split
                     of --val-fraction F cuts them (for --val-data)

Standard library only.

  python3 bench/make_u16_shard.py ../shared/data/tinyshakespeare.txt /tmp/shakespeare \\
      --val-fraction 0.1
  build/bin/fa-run train --data-format u16 --vocab 256 --data /tmp/shakespeare.llmc.bin ...
"""

import argparse
import array
import struct
import sys

LLMC_MAGIC = 20240520
LLMC_HEADER_INTS = 256


def tokens_bytes(tokens):
    words = array.array("H", tokens)
    if sys.byteorder != "little":
        words.byteswap()
    return words.tobytes()


def llmc_header(count, version=1):
    header = [0] * LLMC_HEADER_INTS
    header[0], header[1], header[2] = LLMC_MAGIC, version, count
    return struct.pack("<%di" % LLMC_HEADER_INTS, *header)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    print(f"{path}: {len(data)} bytes")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("text", help="input file, read as bytes")
    parser.add_argument("out", help="output path prefix")
    parser.add_argument("--val-fraction", type=float, default=None,
                        help="also write OUT.train.bin and OUT.val.bin")
    args = parser.parse_args()
    with open(args.text, "rb") as f:
        tokens = list(f.read())
    if not tokens:
        sys.exit(f"{args.text}: the file is empty")
    if len(tokens) >= 2**31:
        sys.exit(f"{args.text}: {len(tokens)} tokens do not fit llm.c's int32 count")
    write(args.out + ".raw.bin", tokens_bytes(tokens))
    write(args.out + ".llmc.bin", llmc_header(len(tokens)) + tokens_bytes(tokens))
    if args.val_fraction is not None:
        if not 0 < args.val_fraction < 1:
            sys.exit("--val-fraction must be in (0, 1)")
        # fa-run's splitCorpus: the last floor(size * fraction) tokens.
        validation = int(len(tokens) * args.val_fraction)
        write(args.out + ".train.bin", tokens_bytes(tokens[:len(tokens) - validation]))
        write(args.out + ".val.bin", tokens_bytes(tokens[len(tokens) - validation:]))


if __name__ == "__main__":
    main()
