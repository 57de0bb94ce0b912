// Package mytest gives each test an isolated MySQL / MariaDB database in the
// server named by the EVENTCENTER_TEST_MYSQL environment variable (a
// go-sql-driver DSN, e.g. ec:ec@tcp(127.0.0.1:3306)/ectest?parseTime=true).
//
// DSN creates a fresh database named after the DSN's (ectest_t<random>:
// grant the test user ALL on `ectest%`.*), returns a DSN on it, and drops it
// when the test ends. DB does the same and returns a pool opened with
// store/mysql.OpenDB, closed at cleanup. Without the variable, tests skip
// with a message saying how to run them; with CI=true they fail instead, so
// CI cannot silently skip them.
package mytest
