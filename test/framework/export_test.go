package framework

// ReadLocal is the Env's serializable read when Env.ReadLocal is nil, for the test against
// a real etcd.
var ReadLocal = readLocal
