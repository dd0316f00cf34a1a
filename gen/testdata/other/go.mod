module example.com/other

go 1.26

require github.com/personagen/personagen v0.0.0
