"""The storage layer's structures and codecs on their own (rax, listpack, ziplist, stream nodes, RDB, glob), against models and Redis's bytes."""
