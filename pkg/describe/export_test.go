package describe

// SetListPageSize sets how many objects a LIST page asks for (tests page small lists) and
// returns a function that restores it.
func SetListPageSize(n int) (restore func()) {
	old := listPageSize
	listPageSize = n
	return func() { listPageSize = old }
}
