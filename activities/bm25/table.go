package bm25

import (
	"encoding/binary"
	"hash/maphash"
)

// table maps strings to short lists of numbers: the index's identifiers (their bytes as in the text) to their
// number and term count, and the terms AddTerms was given to their number. It is an open-addressing table: a slot
// holds a tag from the key's hash and where its entry starts in one byte arena, and an entry is the count of
// numbers, the key's length and hash, the numbers and the key's bytes, side by side, so that finding a known key
// reads the slot and one place of the arena, and keys cost no allocation of their own. A Go map keyed by string
// reads more places (its control word, its slot, the key's bytes, then the value), allocates every key, and holds
// pointers the collector scans; Add looks up every identifier of every document.
type table struct {
	seed  maphash.Seed
	slots []uint64 // a power of two long, at most half full: a tag in the top 24 bits (0: empty), the offset below
	arena []byte
	n     int
}

const (
	entryHeader = 16 // an entry's count of numbers and key length, 4 bytes each, and the key's hash
	offBits     = 40
	offMask     = 1<<offBits - 1
)

func newTable() table {
	return table{seed: maphash.MakeSeed(), slots: make([]uint64, 1024)}
}

// hashOf is the hash of a key, for find and warm.
func (t *table) hashOf(key string) uint64 { return maphash.String(t.seed, key) }

func (t *table) place(h uint64) (tag uint64, at int) {
	return (h>>offBits | 1) << offBits, int(h) & (len(t.slots) - 1)
}

// find returns key's numbers, 4 little-endian bytes each (see number), or ok false for a key not added; h is
// hashOf(key).
func (t *table) find(key string, h uint64) (nums []byte, ok bool) {
	tag, i := t.place(h)
	for {
		s := t.slots[i]
		if s == 0 {
			return nil, false
		}
		if s&^offMask == tag {
			e := t.arena[s&offMask:]
			n, size := binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint32(e[4:])
			at := entryHeader + 4*int(n)
			if int(size) == len(key) && string(e[at:at+len(key)]) == key {
				return e[entryHeader:at], true
			}
		}
		i = (i + 1) & (len(t.slots) - 1)
	}
}

// warm reads the slots of the hashes, then the entries they point to, and returns a sum of what it read. Each read
// is independent of the others, so the processor overlaps their cache misses, and find then reads from the cache:
// finding the identifiers of a document one after the other would wait for two misses in turn for each.
func (t *table) warm(hs []uint64) (sum uint64) {
	mask := len(t.slots) - 1
	for _, h := range hs {
		sum += t.slots[int(h)&mask]
	}
	for _, h := range hs {
		if s := t.slots[int(h)&mask]; s != 0 {
			sum += uint64(t.arena[s&offMask])
		}
	}
	return sum
}

// number is the k-th number of a list find returned.
func number(nums []byte, k int) int32 { return int32(binary.LittleEndian.Uint32(nums[4*k:])) }

// add records a key that find did not find, h its hashOf, with its numbers and returns them as find does.
func (t *table) add(key string, h uint64, nums ...int32) []byte {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	off := len(t.arena)
	if off > offMask {
		panic("bm25: a table of more than 1 TiB")
	}
	if need := entryHeader + 4*len(nums) + len(key); cap(t.arena)-off < need {
		// Double: append's growth by a quarter for large slices copies the arena about five times over.
		t.arena = append(make([]byte, 0, max(2*cap(t.arena), off+need, 4096)), t.arena...)
	}
	t.arena = binary.LittleEndian.AppendUint32(t.arena, uint32(len(nums)))
	t.arena = binary.LittleEndian.AppendUint32(t.arena, uint32(len(key)))
	t.arena = binary.LittleEndian.AppendUint64(t.arena, h)
	for _, v := range nums {
		t.arena = binary.LittleEndian.AppendUint32(t.arena, uint32(v))
	}
	t.arena = append(t.arena, key...)
	t.put(h, off)
	t.n++
	return t.arena[off+entryHeader : off+entryHeader+4*len(nums)]
}

func (t *table) put(h uint64, off int) {
	tag, i := t.place(h)
	for t.slots[i] != 0 {
		i = (i + 1) & (len(t.slots) - 1)
	}
	t.slots[i] = tag | uint64(off)
}

// grow doubles the slots and puts every entry back, by the hash the entry keeps.
func (t *table) grow() {
	t.slots = make([]uint64, 2*len(t.slots))
	for off := 0; off < len(t.arena); {
		_, _, h, next := t.entryAt(off)
		t.put(h, off)
		off = next
	}
}

// each calls f with every entry's key and numbers, in the order added.
func (t *table) each(f func(key, nums []byte)) {
	for off := 0; off < len(t.arena); {
		key, nums, _, next := t.entryAt(off)
		f(key, nums)
		off = next
	}
}

// entryAt decodes the arena entry at off; next is where the following one starts.
func (t *table) entryAt(off int) (key, nums []byte, h uint64, next int) {
	e := t.arena[off:]
	n, size := int(binary.LittleEndian.Uint32(e)), int(binary.LittleEndian.Uint32(e[4:]))
	at := entryHeader + 4*n
	return e[at : at+size], e[entryHeader:at], binary.LittleEndian.Uint64(e[8:]), off + at + size
}
