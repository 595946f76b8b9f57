module i386socket

go 1.22
