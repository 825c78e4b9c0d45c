package providers

// A streamed chat chunk was read twice over: one pass checked it and split
// it into members, then relayed.chatDelta walked its choices again
// (objectMembers of every choice, then of every delta) for the text and
// the finish. validChunk does both in the one pass: while it checks the
// choices member it keeps what chatDelta would read of it (issue 33,
// fifth round). TestValidChunk and FuzzValidChunk hold it to the two
// passes (validJSON and objectMembers, then chatDelta).

// chunkWalk is what one pass over a chat chunk reads: its members, the
// members of every choice's delta (in the order chatDelta reads them) and
// whether a choice carries a finish_reason, both of the last member named
// choices, which is the one chatDelta is given.
type chunkWalk struct {
	members []jsonMember
	deltas  []jsonMember
	// finished: a choice's finish_reason says it is over (finishes).
	finished bool
}

// validChunk checks that b is a valid JSON object (validJSON) and splits
// it into its members (objectMembers) into w.members, reading the choices
// on the way into w.deltas and w.finished. read is false when it could
// not (a value nested past the validator's depth: the two passes decide)
// and chatDelta must read the choices itself; ok is false when b is not a
// valid JSON object.
func validChunk(w *chunkWalk, b []byte) (ok, read bool) {
	w.members, w.deltas, w.finished = w.members[:0], w.deltas[:0], false
	v := jsonValidator{b: b}
	v.space()
	if v.i >= len(b) || b[v.i] != '{' {
		return false, false
	}
	v.i++
	v.space()
	if v.i < len(b) && b[v.i] == '}' {
		v.i++
		v.space()
		return v.i == len(b), true
	}
	for {
		ks := v.i
		if v.i >= len(b) || b[v.i] != '"' || !v.str() {
			return false, false
		}
		key := b[ks:v.i]
		v.space()
		if v.i >= len(b) || b[v.i] != ':' {
			return false, false
		}
		v.i++
		v.space()
		vs := v.i
		var valid bool
		if isKey(key, "choices") {
			// chatDelta reads the last choices member only.
			w.deltas, w.finished = w.deltas[:0], false
			valid = v.choices(w)
		} else {
			valid = v.value(1)
		}
		if !valid {
			if v.deep {
				// Nested deeper than the validator goes: the two passes.
				if !validJSON(b) {
					return false, false
				}
				w.members, ok = objectMembers(w.members[:0], b)
				return ok, false
			}
			return false, false
		}
		w.members = append(w.members, jsonMember{key: key, value: b[vs:v.i]})
		if more, ok := v.next('}'); !more {
			if !ok {
				return false, false
			}
			v.space()
			return v.i == len(b), true
		}
	}
}

// choices checks the value at v.i as value(1) does; when it is an array,
// its objects are read as chatDelta reads them (anything else in it, or a
// choices that is no array, gives chatDelta nothing to read).
func (v *jsonValidator) choices(w *chunkWalk) bool {
	if v.i >= len(v.b) || v.b[v.i] != '[' {
		return v.value(1)
	}
	v.i++ // [
	v.space()
	if v.i < len(v.b) && v.b[v.i] == ']' {
		v.i++
		return true
	}
	for {
		var ok bool
		if v.i < len(v.b) && v.b[v.i] == '{' {
			ok = v.choice(w)
		} else {
			ok = v.value(2)
		}
		if !ok {
			return false
		}
		if more, ok := v.next(']'); !more {
			return ok
		}
	}
}

// choice checks the object at v.i (a choice, depth 3 as object counts
// it), keeping its delta's members and whether it finished.
func (v *jsonValidator) choice(w *chunkWalk) bool {
	return v.members(func(key []byte, vs int) bool {
		if isKey(key, "delta") && vs < len(v.b) && v.b[vs] == '{' {
			return v.members(func(dkey []byte, dvs int) bool {
				if !v.value(4) {
					return false
				}
				w.deltas = append(w.deltas, jsonMember{key: dkey, value: v.b[dvs:v.i]})
				return true
			})
		}
		if !v.value(3) {
			return false
		}
		if finishes(jsonMember{key: key, value: v.b[vs:v.i]}) {
			w.finished = true
		}
		return true
	})
}

// members checks the object at v.i as object does, calling value for
// each member with its key, v.i at its value (whitespace skipped, vs);
// value checks the value and leaves v.i past it.
func (v *jsonValidator) members(value func(key []byte, vs int) bool) bool {
	v.i++ // {
	v.space()
	if v.i < len(v.b) && v.b[v.i] == '}' {
		v.i++
		return true
	}
	for {
		ks := v.i
		if v.i >= len(v.b) || v.b[v.i] != '"' || !v.str() {
			return false
		}
		key := v.b[ks:v.i]
		v.space()
		if v.i >= len(v.b) || v.b[v.i] != ':' {
			return false
		}
		v.i++
		v.space()
		if !value(key, v.i) {
			return false
		}
		if more, ok := v.next('}'); !more {
			return ok
		}
	}
}
