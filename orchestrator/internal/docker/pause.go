package docker

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// pauseCode is, per architecture, a loop that waits for a signal for ever:
// the program of a lock container, which must run (`docker container
// prune` removes every container that does not) on an engine that may have
// no image at all. The process is its container's first, so the kernel
// delivers it no signal it has no handler for but SIGKILL, which is what
// stops it.
var pauseCode = map[string]struct {
	machine elf.Machine
	code    []byte
}{
	// again: mov eax, 34 (pause); syscall; jmp again
	"amd64": {elf.EM_X86_64, []byte{0xb8, 0x22, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xeb, 0xf7}},
	// arm64 has no pause: ppoll(NULL, 0, NULL, NULL) waits the same way.
	// again: mov x0..x3, #0; mov x8, #73 (ppoll); svc #0; b again
	"arm64": {elf.EM_AARCH64, le32(0xd2800000, 0xd2800001, 0xd2800002, 0xd2800003, 0xd2800928, 0xd4000001, 0x17fffffa)},
}

func le32(words ...uint32) []byte {
	b := make([]byte, 0, 4*len(words))
	for _, w := range words {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}

// pauseBase is where the program is loaded, the customary address of a
// static executable.
const pauseBase = 0x400000

// pauseProgram is the static Linux executable of pauseCode for an
// architecture as Go names it: an ELF header, one loadable segment that is
// the whole file, and the code after them.
func pauseProgram(arch string) ([]byte, error) {
	p, ok := pauseCode[arch]
	if !ok {
		return nil, fmt.Errorf("no lock program for the engine's architecture %s (amd64 and arm64 have one)", arch)
	}
	headers := uint64(binary.Size(elf.Header64{}) + binary.Size(elf.Prog64{}))
	size := headers + uint64(len(p.code))
	header := elf.Header64{
		Type: uint16(elf.ET_EXEC), Machine: uint16(p.machine), Version: uint32(elf.EV_CURRENT),
		Entry: pauseBase + headers, Phoff: uint64(binary.Size(elf.Header64{})),
		Ehsize: uint16(binary.Size(elf.Header64{})), Phentsize: uint16(binary.Size(elf.Prog64{})), Phnum: 1,
	}
	copy(header.Ident[:], elf.ELFMAG)
	header.Ident[elf.EI_CLASS], header.Ident[elf.EI_DATA], header.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	segment := elf.Prog64{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X), Vaddr: pauseBase, Paddr: pauseBase,
		Filesz: size, Memsz: size, Align: 0x1000}
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, header) // a bytes.Buffer takes every write
	_ = binary.Write(&b, binary.LittleEndian, segment)
	b.Write(p.code)
	return b.Bytes(), nil
}
