// Package repository owns provider repositories: the provider registry, GitHub and local repository
// clients, the on-disk cache, version resolution, metadata, and components processing.
package repository
