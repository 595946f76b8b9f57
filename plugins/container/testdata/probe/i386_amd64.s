#include "textflag.h"

// func socket386(family, typ, proto uint32) int32
TEXT ·socket386(SB), NOSPLIT, $0-20
	MOVL	$359, AX // i386 socket
	MOVL	family+0(FP), BX
	MOVL	typ+4(FP), CX
	MOVL	proto+8(FP), DX
	INT	$0x80
	MOVL	AX, ret+16(FP)
	RET
