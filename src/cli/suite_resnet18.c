/* suite_resnet18.c: the built-in suite "resnet18" of `opbench bench`, so the
 * main job needs no files. Copied verbatim from shared/data/resnet18_conv.txt;
 * edit that file and this string together. */
#include "cli.h"

const char cli_suite_resnet18[] =
    "# ResNet-18 (ImageNet, 224x224) at batch 1: the 11 distinct conv2d workloads, NCHW, float32.\n"
    "# count = how many times the workload occurs in the network (20 conv2d layers in all).\n"
    "# op     shape                                 stride pad count\n"
    "conv2d  N=1,C=3,H=224,W=224,K=64,R=7,S=7      2      3   1\n"
    "conv2d  N=1,C=64,H=56,W=56,K=64,R=3,S=3       1      1   4\n"
    "conv2d  N=1,C=64,H=56,W=56,K=128,R=3,S=3      2      1   1\n"
    "conv2d  N=1,C=64,H=56,W=56,K=128,R=1,S=1      2      0   1\n"
    "conv2d  N=1,C=128,H=28,W=28,K=128,R=3,S=3     1      1   3\n"
    "conv2d  N=1,C=128,H=28,W=28,K=256,R=3,S=3     2      1   1\n"
    "conv2d  N=1,C=128,H=28,W=28,K=256,R=1,S=1     2      0   1\n"
    "conv2d  N=1,C=256,H=14,W=14,K=256,R=3,S=3     1      1   3\n"
    "conv2d  N=1,C=256,H=14,W=14,K=512,R=3,S=3     2      1   1\n"
    "conv2d  N=1,C=256,H=14,W=14,K=512,R=1,S=1     2      0   1\n"
    "conv2d  N=1,C=512,H=7,W=7,K=512,R=3,S=3       1      1   3\n";
