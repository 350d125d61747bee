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
 * on MPI_FLOAT sums, bytes/4 elements).  FRESH=1: a new pattern is written
 * into the send buffer before every call, outside the timed part, as
 * sharm_bench does by default, and each call is timed on its own. */
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
 else {fprintf(stderr,"op?\n");MPI_Abort(c,1);} }
int main(int argc,char**argv){MPI_Init(&argc,&argv);int me,p;MPI_Comm_rank(MPI_COMM_WORLD,&me);MPI_Comm_size(MPI_COMM_WORLD,&p);
 int blocks=atoi(argv[argc-2]),calls=atoi(argv[argc-1]);
 MPI_Comm A,B;MPI_Comm_dup(MPI_COMM_WORLD,&A);MPI_Comm_dup(MPI_COMM_WORLD,&B);
 for(int a=1;a<argc-2;a+=2){const char*op=argv[a];int n=atoi(argv[a+1]);
  size_t big=(size_t)n*p+64; char*s=malloc(big),*r=malloc(big),*s2=malloc(big),*r2=malloc(big);memset(s,1,big);memset(r,0,big);memset(s2,1,big);memset(r2,0,big);
  double*ta=malloc(blocks*sizeof(double)),*tb=malloc(blocks*sizeof(double)),*rat=malloc(blocks*sizeof(double));
  for(int w=0;w<calls;w++){run(op,A,s,r,n);run(op,B,s2,r2,n);}
  for(int b=0;b<blocks;b++){ for(int k=0;k<2;k++){ MPI_Comm c=(k^(b&1))?B:A; char*ss=c==A?s:s2,*rr=c==A?r:r2; MPI_Barrier(c); double t0=MPI_Wtime(); double acc=0; if(getenv("FRESH")){ for(int i=0;i<calls;i++){ memset(ss,(char)(i+b),(size_t)n*p); MPI_Barrier(c); double t1=MPI_Wtime(); run(op,c,ss,rr,n); acc+=MPI_Wtime()-t1; } } else { for(int i=0;i<calls;i++)run(op,c,ss,rr,n); acc=MPI_Wtime()-t0; } double t=acc/calls*1e6; double mx; MPI_Allreduce(&t,&mx,1,MPI_DOUBLE,MPI_MAX,c); if(c==A)ta[b]=mx;else tb[b]=mx;} rat[b]=tb[b]/ta[b]; }
  qsort(rat,blocks,sizeof(double),cmpd);
  if(!me)printf("PAIR op=%s bytes=%d A=%.2f B=%.2f B/A=%.3f q1=%.3f q3=%.3f\n",op,n,med(ta,blocks),med(tb,blocks),rat[blocks/2],rat[blocks/4],rat[3*blocks/4]);
  free(s);free(r);free(s2);free(r2);}
 MPI_Comm_free(&A);MPI_Comm_free(&B);MPI_Finalize();}
