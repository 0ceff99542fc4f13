#ifndef CEpoll_SHIM_H
#define CEpoll_SHIM_H
/* epoll for the realtime bench's load client (Glibc's Swift module does not export it). */
#include <sys/epoll.h>
#endif
