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

// func socketcall386(call, args uint32) int32
TEXT ·socketcall386(SB), NOSPLIT, $0-12
	MOVL	$102, AX // i386 socketcall
	MOVL	call+0(FP), BX
	MOVL	args+4(FP), CX
	INT	$0x80
	MOVL	AX, ret+8(FP)
	RET
