#include "tessera.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  int m=atoi(argv[1]),n=atoi(argv[2]),kk=atoi(argv[3]); int threads=atoi(argv[4]); double secs=atof(argv[5]);
  tsr_context *ctx; 
  if (tsr_context_create(&ctx, NULL) != TSR_OK) { printf("ctx fail\n"); return 1; }
  tsr_context_set_num_threads(ctx, threads);
  float *a=aligned_alloc(64,(size_t)n*n*4),*b=aligned_alloc(64,(size_t)n*n*4),*c=aligned_alloc(64,(size_t)n*n*4);
  for(size_t i=0;i<(size_t)m*kk;i++)a[i]=(float)(i%7)-3; for(size_t i=0;i<(size_t)kk*n;i++)b[i]=(float)(i%5)-2;
  tsr_gemm_desc d; tsr_gemm_desc_init(&d); d.m=m;d.n=n;d.k=kk;
  tsr_gemm(ctx,&d,a,b,c);
  double t0=now(); long it=0; while(now()-t0<secs){tsr_gemm(ctx,&d,a,b,c);it++;}
  double t=now()-t0; printf("%dx%dx%d %d thr: %.1f GFLOP/s\n",m,n,kk,threads,2.0*m*n*kk*it/t/1e9);
  return 0;}
