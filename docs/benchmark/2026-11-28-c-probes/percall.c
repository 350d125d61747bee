#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdatomic.h>
#include <time.h>
static double now_ns(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static double line_rtt(_Atomic long*line,int me,long*seq){ MPI_Barrier(MPI_COMM_WORLD); double best=1e9; for(int k=0;k<20;k++){ long v=++*seq; if(me==0){ double t0=now_ns(); atomic_store(&line[0],v); while(atomic_load(&line[8])!=v); double d=now_ns()-t0; if(d<best)best=d; } else if(me==1){ while(atomic_load(&line[0])!=v); atomic_store(&line[8],v); } } return best; }
static void ptb(MPI_Comm w,int me,int p){char x=0,y;for(int d=1;d<p;d<<=1)MPI_Sendrecv(&x,0,MPI_BYTE,(me+d)%p,7,&y,0,MPI_BYTE,(me-d+p)%p,7,w,MPI_STATUS_IGNORE);}
int main(int argc,char**argv){MPI_Init(&argc,&argv);int me,p;MPI_Comm_rank(MPI_COMM_WORLD,&me);MPI_Comm_size(MPI_COMM_WORLD,&p);
 int n=atoi(argv[1]),calls=atoi(argv[2]),blocks=atoi(argv[3]); int fresh=getenv("FRESH")!=0,check=getenv("CHECK")!=0,pt=getenv("PTB")!=0,quiet=getenv("QUIET")!=0;
 MPI_Comm c,w; MPI_Comm_dup(MPI_COMM_WORLD,&c);MPI_Comm_dup(MPI_COMM_WORLD,&w);
 char*s=malloc(n);memset(s,1,n);
 double*t=calloc(calls*blocks,sizeof(double)); long sum=0;
 for(int w=0;w<10;w++)MPI_Bcast(s,n,MPI_BYTE,0,c);
 _Atomic long*line; MPI_Win win; long seq=0; {MPI_Aint sz; int du; MPI_Win_allocate_shared(me==0?256:0,1,MPI_INFO_NULL,MPI_COMM_WORLD,&line,&win); MPI_Win_shared_query(win,0,&sz,&du,&line); if(me==0){atomic_store(&line[0],0);atomic_store(&line[8],0);} MPI_Barrier(MPI_COMM_WORLD);}
 for(int b=0;b<blocks;b++){ double rt=line_rtt(line,me,&seq); for(int i=0;i<calls;i++){ if(fresh&&me==0)memset(s,(char)(i+b),n); if(pt)ptb(w,me,p);else MPI_Barrier(c); double t0=MPI_Wtime(); MPI_Bcast(s,n,MPI_BYTE,0,c); double d=MPI_Wtime()-t0; 
   if(check&&me)for(int k=0;k<n;k+=64)sum+=s[k];
   if(getenv("GAPUS")){double g=atof(getenv("GAPUS"))*1e-6,t2=MPI_Wtime(); while(MPI_Wtime()-t2<g);}
   if(getenv("POLLUTE")){static char*pb; size_t pn=atol(getenv("POLLUTE")); if(!pb)pb=malloc(pn); memset(pb,i,pn);}
   double mx; MPI_Reduce(&d,&mx,1,MPI_DOUBLE,MPI_MAX,0,w); t[b*calls+i]=mx*1e6;}
   if(!me&&!quiet){printf("B%d rtt %.0f:",b,rt);for(int i=0;i<calls;i++)printf(" %.0f",t[b*calls+i]);printf("\n");}
 }
 if(!me){ double*c2=malloc(calls*blocks*sizeof(double));memcpy(c2,t,calls*blocks*sizeof(double)); for(int i=0;i<calls*blocks;i++)for(int j=i+1;j<calls*blocks;j++)if(c2[j]<c2[i]){double x=c2[i];c2[i]=c2[j];c2[j]=x;} printf("median %.1f\n",c2[calls*blocks/2]);}
 if(sum==42)printf("x");
 MPI_Finalize();}
