module probe

go 1.22
