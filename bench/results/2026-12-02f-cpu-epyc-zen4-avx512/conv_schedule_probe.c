/* time one conv (bf16 or f32, NHWC, filter packed once) of a ResNet shape */
#include "tessera.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  /* c h w k r s stride pad res n dtype(0 f32,1 bf16) packed secs */
  int c=atoi(argv[1]),h=atoi(argv[2]),w=atoi(argv[3]),k=atoi(argv[4]),r=atoi(argv[5]),s=atoi(argv[6]),st=atoi(argv[7]),pad=atoi(argv[8]),res=atoi(argv[9]),n=atoi(argv[10]),bf=atoi(argv[11]),packed=atoi(argv[12]);double secs=atof(argv[13]);
  tsr_context *ctx; tsr_context_create(&ctx,NULL); tsr_context_set_num_threads(ctx,2);
  tsr_conv2d_desc d; tsr_conv2d_desc_init(&d);
  d.n=n;d.c=c;d.h=h;d.w=w;d.k=k;d.r=r;d.s=s;d.stride_h=d.stride_w=st;d.pad_top=d.pad_bottom=d.pad_left=d.pad_right=pad;
  tsr_dtype t=bf?TSR_BF16:TSR_F32; d.x_dtype=d.w_dtype=d.y_dtype=t; size_t es=bf?2:4;
  int64_t p,q; tsr_conv2d_output_shape(&d,&p,&q);
  size_t xn=(size_t)n*c*h*w, wn=(size_t)k*c*r*s, yn=(size_t)n*k*p*q;
  void *x=calloc(xn,es),*wt=calloc(wn,es),*y=calloc(yn,es); float*bias=calloc(k,4);
  for(size_t i=0;i<xn;i++){ if(bf) ((unsigned short*)x)[i]=0x3f80+(i%7); else ((float*)x)[i]=(i%7)*0.1f; }
  for(size_t i=0;i<wn;i++){ if(bf) ((unsigned short*)wt)[i]=0x3c00+(i%5); else ((float*)wt)[i]=(i%5)*0.01f; }
  d.epilogue.steps[d.epilogue.num_steps++]=tsr_epilogue_bias(bias,TSR_F32);
  if(res) d.epilogue.steps[d.epilogue.num_steps++]=tsr_epilogue_residual(y,t,0,1.0f);
  d.epilogue.steps[d.epilogue.num_steps++]=tsr_epilogue_activation(TSR_ACT_RELU);
  void *wuse=wt;
  if(packed){size_t pb; tsr_conv2d_packed_filter_size(ctx,&d,&pb); wuse=malloc(pb); if(tsr_conv2d_pack_filter(ctx,&d,wt,wuse,pb)!=TSR_OK){printf("pack fail %s\n",tsr_last_error());return 1;} d.filter_format=TSR_FILTER_PACKED;}
  if(tsr_conv2d(ctx,&d,x,wuse,y)!=TSR_OK){printf("fail %s\n",tsr_last_error());return 1;}
  double best=1e9; double t0=now();
  while(now()-t0<secs){ double a=now(); for(int i=0;i<10;i++) tsr_conv2d(ctx,&d,x,wuse,y); double e=(now()-a)/10; if(e<best)best=e; }
  double fl=2.0*n*k*p*q*(double)c*r*s;
  printf("%.1f GFLOP/s best (%.1f us)\n",fl/best/1e9,best*1e6);
  return 0;}
