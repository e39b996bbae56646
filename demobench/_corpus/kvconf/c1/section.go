package kvconf

import "sort"

// File is a parsed configuration: sections in the order they first appear.
type File struct {
	Sections []*Section
	byName   map[string]*Section
}

// Section is a named group of keys, in the order they first appear.
type Section struct {
	Name string
	Line int // line of the header, 0 for the global section
	Keys []*Key
	idx  map[string]*Key
}

// Key is one key and its (unquoted) value.
type Key struct {
	Name  string
	Value string
	Line  int
}

func newFile() *File { return &File{byName: map[string]*Section{}} }

// NewFile returns an empty configuration to fill with Set.
func NewFile() *File { return newFile() }

func (f *File) addSection(name string, line int) *Section {
	s := &Section{Name: name, Line: line, idx: map[string]*Key{}}
	f.Sections = append(f.Sections, s)
	f.byName[name] = s
	return s
}

// Section returns the named section, or nil.
func (f *File) Section(name string) *Section { return f.byName[name] }

// Get returns the value of key in section and whether it is set.
func (f *File) Get(section, key string) (string, bool) {
	s := f.byName[section]
	if s == nil {
		return "", false
	}
	return s.Get(key)
}

// Set sets key in section, creating the section if needed.
func (f *File) Set(section, key, value string) {
	s := f.byName[section]
	if s == nil {
		s = f.addSection(section, 0)
	}
	s.set(key, value, 0)
}

// SectionNames lists the section names in sorted order.
func (f *File) SectionNames() []string {
	names := make([]string, 0, len(f.Sections))
	for _, s := range f.Sections {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return names
}

// Get returns the value of key and whether it is set.
func (s *Section) Get(key string) (string, bool) {
	if k := s.idx[key]; k != nil {
		return k.Value, true
	}
	return "", false
}

// Has reports whether key is set.
func (s *Section) Has(key string) bool { _, ok := s.idx[key]; return ok }

// set adds a key or replaces its value (the last assignment wins).
func (s *Section) set(key, value string, line int) {
	if k := s.idx[key]; k != nil {
		k.Value, k.Line = value, line
		return
	}
	k := &Key{Name: key, Value: value, Line: line}
	s.Keys = append(s.Keys, k)
	s.idx[key] = k
}

// Delete removes key from the section.
func (s *Section) Delete(key string) {
	if s.idx[key] == nil {
		return
	}
	delete(s.idx, key)
	for i, k := range s.Keys {
		if k.Name == key {
			s.Keys = append(s.Keys[:i], s.Keys[i+1:]...)
			break
		}
	}
}
