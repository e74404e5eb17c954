module github.com/scout-discovery/scout

go 1.25.0
