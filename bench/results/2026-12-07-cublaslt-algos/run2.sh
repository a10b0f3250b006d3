export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvcc -O2 -std=c++17 -x cu bench/cublaslt_algos.cpp -lcublasLt -o /tmp/cublaslt_algos || exit 1
/tmp/cublaslt_algos --tokens 16384 --width 768 --candidates 16 | tee $OUT/algos_85m.txt
/tmp/cublaslt_algos --tokens 16384 --width 384 --candidates 16 | tee $OUT/algos_11m.txt
