#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
// np=2 Allgather by CMA, two threads: pull (readv the peer's send block)
// or push (writev our send block into the peer's receive buffer); the own
// block copied by memcpy after.  Fresh send data written before each call.
static size_t N; static int push, reps, fresh; static char *src[2], *dst[2];
static _Alignas(64) _Atomic long bar[2]; static double *ts[2];
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
static void barrier(int me,long v){atomic_store(&bar[me],v);while(atomic_load(&bar[1-me])<v);}
static void *run(void*x){int me=(int)(long)x,o=1-me; pin(me); volatile long sink=0; pid_t pid=getpid();
  for(long it=1;it<=reps;it++){
    if(fresh){memset(src[me],it&0xff,N); for(size_t i=0;i<2*N;i+=64) sink+=dst[me][i];}
    barrier(me,3*it);
    double t0=now();
    struct iovec l,r;
    if(push){ l.iov_base=src[me]; l.iov_len=N; r.iov_base=dst[o]+me*N; r.iov_len=N; process_vm_writev(pid,&l,1,&r,1,0);}
    else { l.iov_base=dst[me]+o*N; l.iov_len=N; r.iov_base=src[o]; r.iov_len=N; process_vm_readv(pid,&l,1,&r,1,0);}
    memcpy(dst[me]+me*N,src[me],N);
    barrier(me,3*it+1);
    ts[me][it-1]=now()-t0;
    barrier(me,3*it+2);
  } return 0;}
int main(int argc,char**argv){N=strtoul(argv[1],0,0); push=atoi(argv[2]); fresh=atoi(argv[3]); reps=atoi(argv[4]);
  for(int i=0;i<2;i++){src[i]=aligned_alloc(4096,N);dst[i]=aligned_alloc(4096,2*N);memset(src[i],1,N);memset(dst[i],0,2*N);ts[i]=malloc(8*reps);}
  pthread_t t; pthread_create(&t,0,run,(void*)1L); run(0); pthread_join(t,0);
  double*a=malloc(8*reps); for(int i=0;i<reps;i++)a[i]=ts[0][i]>ts[1][i]?ts[0][i]:ts[1][i];
  for(int i=0;i<reps;i++)for(int j=i+1;j<reps;j++)if(a[j]<a[i]){double x=a[i];a[i]=a[j];a[j]=x;}
  printf("N=%zu %s fresh=%d: median %.1f us\n",N,push?"push":"pull",fresh,a[reps/2]/1e3);}
