// Package digest is the one way capctl names content by its hash: "sha256:" and the hex SHA-256,
// the form plan files record and check and container registries use.
package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Bytes is the digest of data.
func Bytes(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// JSON is the digest of v's JSON encoding. encoding/json writes struct fields in declaration
// order and map keys sorted, so equal values have equal digests.
func JSON(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return Bytes(data), nil
}
