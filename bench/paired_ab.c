/* Paired A/B within one launch (bench/README.md, "Paired A/B").
 *
 * Two duplicates of MPI_COMM_WORLD, A then B, each with its own sharm
 * segment, take turns in blocks of CALLS calls (which one goes first
 * alternates by block).  Per block each communicator's mean time per call
 * is the maximum over ranks; the output gives, per (op, bytes), the median
 * of the blocks' means for A and for B and the median and quartiles of the
 * blocks' B/A ratios.  Both sides meet the same state of this VM, which
 * moves from second to second, so their ratio is steadier than any
 * comparison of separate launches.  B differs from A only in a build that
 * serves the second duplicate (cid 4) with a variant; without one, the run
 * is an A/A test of the method's own spread.
 *
 *   mpicc -O2 -o paired_ab bench/paired_ab.c
 *   mpirun -np 2 ./paired_ab allgather 65536 bcast 1048576 16 100
 *
 * Ops: allgather alltoall bcast reduce allreduce gather scatter barrier (reductions
 * on MPI_FLOAT sums, bytes/4 elements); ar_bcast and ar_gather: an Allreduce
 * of 1024 floats before each Bcast or Gather, both timed, and ar_only that
 * Allreduce alone (bytes >= 4 KiB).  FRESH=1: a new pattern is written
 * into the send buffer before every call, outside the timed part, as
 * sharm_bench does by default, and each call is timed on its own.
 *
 * RTT=1 (np >= 2, one node): before each block ranks 0 and 1 time a cache
 * line's round trip through a shared window (the least of 20), and a SPLIT
 * line per (op, bytes) gives the median B/A of the blocks that began with
 * the cores near (under PROBE_NEAR_NS) and of those that began far: on this
 * VM the host moves the two vCPUs between near and far cores every few
 * seconds, and which stores win depends on it.  Each block also prints a
 * BLOCK line (rtt, A, B, B/A), which bench/paired_split.py pools over
 * launches. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static double med(double*v,int n){double*c=malloc(n*sizeof*c);memcpy(c,v,n*sizeof*c);qsort(c,n,sizeof*c,cmpd);double m=c[n/2];free(c);return m;}
static void run(const char*op,MPI_Comm c,char*s,char*r,int n){int p;MPI_Comm_size(c,&p);
 if(!strcmp(op,"allgather"))MPI_Allgather(s,n,MPI_BYTE,r,n,MPI_BYTE,c);
 else if(!strcmp(op,"alltoall"))MPI_Alltoall(s,n,MPI_BYTE,r,n,MPI_BYTE,c);
 else if(!strcmp(op,"bcast"))MPI_Bcast(s,n,MPI_BYTE,0,c);
 else if(!strcmp(op,"reduce"))MPI_Reduce(s,r,n/4,MPI_FLOAT,MPI_SUM,0,c);
 else if(!strcmp(op,"allreduce"))MPI_Allreduce(s,r,n/4,MPI_FLOAT,MPI_SUM,c);
 else if(!strcmp(op,"gather"))MPI_Gather(s,n,MPI_BYTE,r,n,MPI_BYTE,0,c);
 else if(!strcmp(op,"scatter"))MPI_Scatter(s,n,MPI_BYTE,r,n,MPI_BYTE,0,c);
 else if(!strcmp(op,"barrier"))MPI_Barrier(c);
 /* an exchange first (on two processes a 4 KiB Allreduce goes through the
  * pair buffer's halves), then the call: streams that follow exchanges */
 else if(!strcmp(op,"ar_bcast")){MPI_Allreduce(s,r,1024,MPI_FLOAT,MPI_SUM,c);MPI_Bcast(s,n,MPI_BYTE,0,c);}
 else if(!strcmp(op,"ar_gather")){MPI_Allreduce(s,r,1024,MPI_FLOAT,MPI_SUM,c);MPI_Gather(s,n,MPI_BYTE,r,n,MPI_BYTE,0,c);}
 else if(!strcmp(op,"ar_only")){MPI_Allreduce(s,r,1024,MPI_FLOAT,MPI_SUM,c);}
 else {fprintf(stderr,"op?\n");MPI_Abort(c,1);} }
#include "line_probe.h"
/* Rank 0 pings, rank 1 answers (20 round trips, line_probe.h), the others
 * only meet them at the barrier; `line` points at two words a cache line
 * apart in a window all share.  Returns the least round trip at rank 0, 0
 * elsewhere. */
static double line_rtt(_Atomic long*line,int me,long*seq){
 MPI_Barrier(MPI_COMM_WORLD);
 return me<=1?line_round_trip_ns(line,me,seq,20):0; }
/* Median of the ratios whose block began near (near=1) or far. */
static double split_med(const double*rat,const double*rtt,int blocks,int near,int*n){
 double*v=malloc(blocks*sizeof*v); *n=0;
 for(int b=0;b<blocks;b++) if((rtt[b]<PROBE_NEAR_NS)==near) v[(*n)++]=rat[b];
 double m=*n?med(v,*n):0; free(v); return m; }
int main(int argc,char**argv){MPI_Init(&argc,&argv);int me,p;MPI_Comm_rank(MPI_COMM_WORLD,&me);MPI_Comm_size(MPI_COMM_WORLD,&p);
 int blocks=atoi(argv[argc-2]),calls=atoi(argv[argc-1]);
 MPI_Comm A,B;MPI_Comm_dup(MPI_COMM_WORLD,&A);MPI_Comm_dup(MPI_COMM_WORLD,&B);
 int timing_rtt=getenv("RTT")&&p>=2; _Atomic long*line=NULL; MPI_Win win=MPI_WIN_NULL; long seq=0;
 if(timing_rtt){ MPI_Aint sz; int du; MPI_Win_allocate_shared(me==0?256:0,1,MPI_INFO_NULL,MPI_COMM_WORLD,&line,&win); MPI_Win_shared_query(win,0,&sz,&du,&line); if(me==0){atomic_store(&line[0],0);atomic_store(&line[8],0);} MPI_Barrier(MPI_COMM_WORLD); }
 for(int a=1;a<argc-2;a+=2){const char*op=argv[a];int n=atoi(argv[a+1]);
  size_t big=(size_t)n*p+64; char*s=malloc(big),*r=malloc(big),*s2=malloc(big),*r2=malloc(big);memset(s,1,big);memset(r,0,big);memset(s2,1,big);memset(r2,0,big);
  double*ta=malloc(blocks*sizeof(double)),*tb=malloc(blocks*sizeof(double)),*rat=malloc(blocks*sizeof(double)),*rtt=calloc(blocks,sizeof(double));
  for(int w=0;w<calls;w++){run(op,A,s,r,n);run(op,B,s2,r2,n);}
  for(int b=0;b<blocks;b++){ if(timing_rtt)rtt[b]=line_rtt(line,me,&seq); for(int k=0;k<2;k++){ MPI_Comm c=(k^(b&1))?B:A; char*ss=c==A?s:s2,*rr=c==A?r:r2; MPI_Barrier(c); double t0=MPI_Wtime(); double acc=0; if(getenv("FRESH")){ for(int i=0;i<calls;i++){ memset(ss,(char)(i+b),(size_t)n*p); MPI_Barrier(c); double t1=MPI_Wtime(); run(op,c,ss,rr,n); acc+=MPI_Wtime()-t1; } } else { for(int i=0;i<calls;i++)run(op,c,ss,rr,n); acc=MPI_Wtime()-t0; } double t=acc/calls*1e6; double mx; MPI_Allreduce(&t,&mx,1,MPI_DOUBLE,MPI_MAX,c); if(c==A)ta[b]=mx;else tb[b]=mx;} rat[b]=tb[b]/ta[b];
   if(timing_rtt&&!me)printf("BLOCK %s %d rtt %.0f A %.1f B %.1f B/A %.3f\n",op,n,rtt[b],ta[b],tb[b],rat[b]); }
  if(timing_rtt&&!me){ int nn,nf; double mn=split_med(rat,rtt,blocks,1,&nn),mf=split_med(rat,rtt,blocks,0,&nf);
   printf("SPLIT op=%s bytes=%d near_blocks=%d near_B/A=%.3f far_blocks=%d far_B/A=%.3f\n",op,n,nn,mn,nf,mf); }
  qsort(rat,blocks,sizeof(double),cmpd);
  if(!me)printf("PAIR op=%s bytes=%d A=%.2f B=%.2f B/A=%.3f q1=%.3f q3=%.3f\n",op,n,med(ta,blocks),med(tb,blocks),rat[blocks/2],rat[blocks/4],rat[3*blocks/4]);
  free(s);free(r);free(s2);free(r2);free(ta);free(tb);free(rat);free(rtt);}
 if(timing_rtt)MPI_Win_free(&win);
 MPI_Comm_free(&A);MPI_Comm_free(&B);MPI_Finalize();}
