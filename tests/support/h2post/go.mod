module h2post

go 1.26
