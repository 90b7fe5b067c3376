package clusterinit

// InitWith and ListImagesWith are the verbs over given clients, for the tests of package
// clusterinit_test.
var (
	InitWith       = initialize
	ListImagesWith = listImages
)
