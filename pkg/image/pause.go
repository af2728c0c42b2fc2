package image

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	goruntime "runtime"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// PauseRef is the name of the built-in pause image, the one Kubernetes uses,
// so manifests and tools that name it find it.
const PauseRef = "registry.k8s.io/pause:3.10"

// BuildPause writes an OCI image tarball of the pause image: one static
// executable, /pause, that installs handlers for SIGTERM and SIGINT (exit 0)
// and sleeps until one arrives. It is the process that holds a pod's
// namespaces.
//
// The executable is generated here, a few hundred bytes of machine code in an
// ELF file (see pauseELF), rather than compiled from Go: that needs no Go
// toolchain and no build step on the node, keeps `go test ./...` working on a
// fresh checkout, and gives the same image digest on every machine. A Go
// program would be a megabyte and would need `make` before the first test.
func BuildPause(w io.Writer) error {
	img, err := PauseImage(PauseRef)
	if err != nil {
		return err
	}
	return Write(w, img)
}

// PauseImage is the pause image of BuildPause, named name.
func PauseImage(name string) (Image, error) {
	bin, err := pauseELF(goruntime.GOARCH)
	if err != nil {
		return Image{}, err
	}
	return Image{
		Name: name,
		Config: ocispec.ImageConfig{
			Entrypoint: []string{"/pause"},
			StopSignal: "SIGTERM",
		},
		Files: []File{{Path: "pause", Mode: 0o755, Data: bin}},
	}, nil
}

// Linux syscall numbers and flags the pause program uses.
const (
	saRestorer = 0x04000000 // SA_RESTORER: x86-64 refuses handlers without one
	sigINT     = 2
	sigTERM    = 15

	elfBase = 0x400000 // load address of the single segment
	elfHdr  = 64 + 56  // ELF header + one program header; the code follows
)

// pauseELF returns a static Linux executable for arch ("amd64" or "arm64"):
//
//	rt_sigaction(SIGTERM, &act, NULL, 8)
//	rt_sigaction(SIGINT, &act, NULL, 8)
//	for { pause() }            // ppoll(NULL, 0, NULL, NULL) on arm64
//	handler: exit_group(0)
//	act: {handler, SA_RESTORER, handler, mask 0}
//
// A PID 1 ignores signals it has no handler for, so the handlers are what let
// a pod's sandbox stop on SIGTERM instead of waiting for SIGKILL.
func pauseELF(arch string) ([]byte, error) {
	var (
		code    []byte
		machine elf.Machine
	)
	le := binary.LittleEndian
	switch arch {
	case "amd64":
		machine = elf.EM_X86_64
		var leaPatches []int // offsets of rel32 fields that point at act
		u32 := func(v uint32) []byte { return le.AppendUint32(nil, v) }
		for _, sig := range []uint32{sigTERM, sigINT} {
			code = append(code, 0xb8)
			code = append(code, u32(13)...) // mov $13 (rt_sigaction), %eax
			code = append(code, 0xbf)
			code = append(code, u32(sig)...) // mov $sig, %edi
			code = append(code, 0x48, 0x8d, 0x35)
			leaPatches = append(leaPatches, len(code))
			code = append(code, 0, 0, 0, 0) // lea act(%rip), %rsi
			code = append(code, 0x31, 0xd2) // xor %edx, %edx
			code = append(code, 0x41, 0xba) // mov $8, %r10d (sizeof sigset)
			code = append(code, u32(8)...)
			code = append(code, 0x0f, 0x05) // syscall
		}
		loop := len(code)
		code = append(code, 0xb8)
		code = append(code, u32(34)...) // mov $34 (pause), %eax
		code = append(code, 0x0f, 0x05) // syscall
		code = append(code, 0xeb, byte(int8(loop-(len(code)+2))))
		handler := len(code)
		code = append(code, 0xb8)
		code = append(code, u32(231)...) // mov $231 (exit_group), %eax
		code = append(code, 0x31, 0xff)  // xor %edi, %edi
		code = append(code, 0x0f, 0x05)  // syscall
		for len(code)%8 != 0 {
			code = append(code, 0xcc) // int3 padding
		}
		act := len(code)
		code = appendSigaction(code, elfBase+elfHdr+uint64(handler))
		for _, p := range leaPatches {
			le.PutUint32(code[p:], uint32(int32(act-(p+4))))
		}
	case "arm64":
		machine = elf.EM_AARCH64
		ins := func(v uint32) { code = le.AppendUint32(code, v) }
		movz := func(reg, imm uint32) { ins(0xd2800000 | imm<<5 | reg) } // movz xREG, #imm
		const svc0 = 0xd4000001
		var adrPatches []int
		for _, sig := range []uint32{sigTERM, sigINT} {
			movz(8, 134) // rt_sigaction
			movz(0, sig)
			adrPatches = append(adrPatches, len(code))
			ins(0x10000001) // adr x1, act (patched below)
			movz(2, 0)
			movz(3, 8)
			ins(svc0)
		}
		loop := len(code)
		movz(8, 73) // ppoll: arm64 has no pause(2)
		for reg := uint32(0); reg <= 4; reg++ {
			movz(reg, 0)
		}
		ins(svc0)
		ins(0x14000000 | uint32(int32(loop-len(code))>>2)&0x3ffffff) // b loop
		handler := len(code)
		movz(8, 94) // exit_group
		movz(0, 0)
		ins(svc0)
		for len(code)%8 != 0 {
			ins(0xd4200000) // brk #0 padding
		}
		act := len(code)
		code = appendSigaction(code, elfBase+elfHdr+uint64(handler))
		for _, p := range adrPatches {
			off := uint32((act - p) >> 2)
			le.PutUint32(code[p:], 0x10000001|(off&0x7ffff)<<5)
		}
	default:
		return nil, fmt.Errorf("no built-in pause program for %s (amd64 and arm64 have one)", arch)
	}

	var b bytes.Buffer
	size := uint64(elfHdr + len(code))
	hdr := elf.Header64{
		Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: uint32(elf.EV_CURRENT),
		Entry: elfBase + elfHdr, Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: 1, Shentsize: 64,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	prog := elf.Prog64{
		Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X),
		Vaddr: elfBase, Paddr: elfBase, Filesz: size, Memsz: size, Align: 0x1000,
	}
	_ = binary.Write(&b, le, hdr)
	_ = binary.Write(&b, le, prog)
	b.Write(code)
	return b.Bytes(), nil
}

// appendSigaction appends the kernel's struct sigaction (handler, flags,
// restorer, mask) for a handler that never returns.
func appendSigaction(code []byte, handler uint64) []byte {
	le := binary.LittleEndian
	code = le.AppendUint64(code, handler)
	code = le.AppendUint64(code, saRestorer)
	code = le.AppendUint64(code, handler)
	return le.AppendUint64(code, 0)
}
