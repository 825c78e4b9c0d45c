package dataplane

import (
	"encoding/binary"
	"hash/crc32"
)

// The request journal's first layout (gw-request-journal 1), which gw
// wrote with pwrite(2) alone: a pwrite is never torn by a kill, so a
// slot had one progress part, overwritten in place, one record, and its
// sequence number in its header. A journal an earlier gw left is read in
// it at the start and rewritten in the current layout.
const (
	requestJournalMagic1 = "gw-request-journal 1\n"
	slotSize1            = 8 << 10
	offFlags1            = 5
	offSeq1              = 8
	offProgress1         = 16
	progressSize1        = 80
	offFinal1            = offProgress1 + progressSize1
	offRecord1           = offFinal1 + finalSize
	recordHead1          = 8 // length and checksum
)

// readSlot1 returns the remnant in a slot of the first layout if the slot
// is in use and its record is whole.
func readSlot1(b []byte) (remnant, bool) {
	if len(b) < offRecord1+recordHead1 || string(b[:4]) != slotMagic {
		return remnant{}, false
	}
	le := binary.LittleEndian
	s := &journalSlot{state: b[offState], flags: b[offFlags1], seq: le.Uint64(b[offSeq1:]), tick: -1}
	if s.state != slotOpen && s.state != slotFinishing {
		return remnant{}, false
	}
	n := int(le.Uint32(b[offRecord1:]))
	if n > maxRecord || offRecord1+recordHead1+n > len(b) {
		return remnant{}, false
	}
	rec := b[offRecord1+recordHead1 : offRecord1+recordHead1+n]
	if crc32.Checksum(rec, crcTable) != le.Uint32(b[offRecord1+4:]) || partSeq(rec) != s.seq {
		return remnant{}, false
	}
	r := remnant{slot: s, raw: append([]byte(nil), rec...), progress: readProgress1(b[offProgress1:offProgress1+progressSize1], s.seq)}
	if s.state == slotFinishing {
		r.final, r.finished = readFinal(b[offFinal1:offFinal1+finalSize], s.seq)
	}
	return r, true
}

// readProgress1 reads the first layout's progress part: seq, time, the
// counts, the input reported, checksum.
func readProgress1(b []byte, seq uint64) journalProgress {
	if !validPart(b, seq) {
		return journalProgress{}
	}
	return progressAt(b, 8)
}
