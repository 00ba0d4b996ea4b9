package levels_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"maps"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// fakeEtcds are the etcd clusters behind the fake operator's EtcdClusters: one database per
// client endpoint, so that a restored cluster holds what its backup held and nothing
// written since.
type fakeEtcds struct {
	mu  sync.Mutex
	dbs map[string]*fakeDB // client endpoint -> its cluster's database
	// prefixes are the keys each tenant's user may use, by user: with auth on, a client
	// whose certificate names such a user reaches only its prefix.
	prefixes map[string]string
}

// fakeDB is the data of one fake etcd cluster and, roughly, its members' database files, as
// far as level 5 needs them: a rewritten value stays in the history until it is compacted;
// every member's file grows to hold what is in use and shrinks only when the member is
// defragmented; a file past the quota raises NOSPACE, after which writes are refused until
// the alarm is disarmed. It also holds what each member's own etcd answers, as far as
// levels 2 and 5 ask one member alone: the release it runs, whether it is restarting, and
// the values a test pod rewrote in its file.
type fakeDB struct {
	keys     map[string]string
	revision int64
	// live is the size of the keys' latest values, history that of the older values not
	// compacted yet.
	live, history int64
	// files are the members' database file sizes, by member name.
	files   map[string]int64
	quota   int64 // 0: none
	noSpace bool
	// members are the members' own etcd, by member name.
	members map[string]*fakeMember
	// writesFailUntil: writes time out until then, as while the client reconnects.
	writesFailUntil time.Time
	// nextRestart: the operator restarts no member for an upgrade before then.
	nextRestart time.Time
}

// fakeMember is one member's etcd, as Status and serializable reads on its own endpoint
// see it.
type fakeMember struct {
	version string
	// downUntil: the member answers nothing until then (it is restarting).
	downUntil time.Time
	// diverged are the values a test pod rewrote in the member's file, by key: the member
	// serves them from its own data, while reads through the client Service serve the
	// majority's.
	diverged map[string]string
	// readAlone is when the member was last read alone (readLocal).
	readAlone time.Time
}

func (m *fakeMember) down() bool { return time.Now().Before(m.downUntil) }

func newFakeDB(keys map[string]string) *fakeDB {
	d := &fakeDB{keys: map[string]string{}, files: map[string]int64{}, members: map[string]*fakeMember{}}
	for k, v := range keys {
		d.put(k, v)
	}
	return d
}

func newFakeEtcds() *fakeEtcds {
	return &fakeEtcds{dbs: map[string]*fakeDB{}, prefixes: map[string]string{}}
}

// grant lets user use the keys under prefix; an empty prefix forgets the user.
func (f *fakeEtcds) grant(user, prefix string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if prefix == "" {
		delete(f.prefixes, user)
		return
	}
	f.prefixes[user] = prefix
}

// allowed says whether user may use key: the operator's own client (no user) every key; a
// tenant's the keys under its prefix, none once it is forgotten.
func (f *fakeEtcds) allowed(user, key string) bool {
	if user == "" {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	prefix, ok := f.prefixes[user]
	return ok && strings.HasPrefix(key, prefix)
}

// deletePrefix deletes the keys under prefix: their values move to the history, as put's
// older values do.
func (d *fakeDB) deletePrefix(prefix string) {
	for k, v := range d.keys {
		if strings.HasPrefix(k, prefix) {
			delete(d.keys, k)
			d.live -= entrySize(k, v)
			d.history += entrySize(k, v)
			d.revision++
		}
	}
}

// endpoint is the client endpoint of c, as the scorecard dials it (TLS disabled).
func endpoint(c *etcdv1alpha1.EtcdCluster) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", cluster.For(c).ClientService(), c.Namespace, cluster.ClientPort)
}

// factory connects to the database of the first endpoint, as the user the configuration's
// client certificate names (none without one: the operator's client).
func (f *fakeEtcds) factory() etcd.Factory {
	return func(cfg etcd.Config) (etcd.Client, error) {
		kv := &fakeKV{etcds: f, endpoint: cfg.Endpoints[0]}
		if cfg.TLS != nil && len(cfg.TLS.Certificates) > 0 {
			cert, err := x509.ParseCertificate(cfg.TLS.Certificates[0].Certificate[0])
			if err != nil {
				return nil, err
			}
			kv.user = cert.Subject.CommonName
		}
		return kv, nil
	}
}

// with runs fn on the database of endpoint, under the lock.
func (f *fakeEtcds) with(endpoint string, fn func(d *fakeDB)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dbs[endpoint] == nil {
		f.dbs[endpoint] = newFakeDB(nil)
	}
	fn(f.dbs[endpoint])
}

// each runs fn on every database, under the lock.
func (f *fakeEtcds) each(fn func(d *fakeDB)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range f.dbs {
		fn(d)
	}
}

// snapshot returns a copy of the keys of endpoint.
func (f *fakeEtcds) snapshot(endpoint string) (keys map[string]string) {
	f.with(endpoint, func(d *fakeDB) { keys = maps.Clone(d.keys) })
	return keys
}

// restore makes keys the data of endpoint.
func (f *fakeEtcds) restore(endpoint string, keys map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dbs[endpoint] = newFakeDB(keys)
}

func entrySize(key, value string) int64 { return int64(len(key) + len(value)) }

func (d *fakeDB) inUse() int64 { return d.live + d.history }

// put writes key and grows every member's file to hold what is in use.
func (d *fakeDB) put(key, value string) {
	if old, ok := d.keys[key]; ok {
		d.live -= entrySize(key, old)
		d.history += entrySize(key, old)
	}
	d.keys[key] = value
	d.live += entrySize(key, value)
	d.revision++
	for m, size := range d.files {
		d.files[m] = max(size, d.inUse())
	}
}

// largestFile is the size of the largest member file; what is in use before any member
// registered one.
func (d *fakeDB) largestFile() int64 {
	n := d.inUse()
	for _, size := range d.files {
		n = max(n, size)
	}
	return n
}

// setMembers registers the files of members (a new member's holds what is in use) and
// their etcd (a new member's runs version), and the quota.
func (d *fakeDB) setMembers(members []string, quota int64, version string) {
	for _, m := range members {
		if _, ok := d.files[m]; !ok {
			d.files[m] = d.inUse()
		}
		if d.members[m] == nil {
			d.members[m] = &fakeMember{version: version}
		}
	}
	d.quota = quota
}

// rewrite rewrites, in member's file, every occurrence of find in the keys' values with
// replace: the member serves the rewritten values from its own data.
func (d *fakeDB) rewrite(member, find, replace string) {
	m := d.members[member]
	if m == nil {
		return
	}
	for k, v := range d.keys {
		if strings.Contains(v, find) {
			if m.diverged == nil {
				m.diverged = map[string]string{}
			}
			m.diverged[k] = strings.ReplaceAll(v, find, replace)
		}
	}
}

// memberOf is the member an endpoint of one member names: the first label of its host
// (framework.MemberEndpoint).
func memberOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	member, _, _ := strings.Cut(u.Hostname(), ".")
	return member
}

// readLocal is the Env's serializable read from one member alone (framework.Env.ReadLocal):
// what that member's own data holds.
func (f *fakeEtcds) readLocal(_ context.Context, cfg etcd.Config, key string) (framework.MemberRead, error) {
	member := memberOf(cfg.Endpoints[0])
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range f.dbs {
		m := d.members[member]
		switch {
		case m == nil:
			continue
		case m.down():
			return framework.MemberRead{}, fmt.Errorf("reading etcd key %q: %w", key, context.DeadlineExceeded)
		}
		m.readAlone = time.Now()
		if v, ok := m.diverged[key]; ok {
			return framework.MemberRead{Value: v, Found: true}, nil
		}
		value, found := d.keys[key]
		return framework.MemberRead{Value: value, Found: found}, nil
	}
	return framework.MemberRead{}, fmt.Errorf("dial tcp: lookup %s: no such host", cfg.Endpoints[0])
}

// openProbe is the Env's probe of one member's release (framework.Env.OpenProbe): what that
// member's own etcd answers, and nothing while it restarts.
func (f *fakeEtcds) openProbe(_ context.Context, cfg etcd.Config) (framework.VersionProbe, error) {
	return fakeProbe{etcds: f, member: memberOf(cfg.Endpoints[0]), endpoint: cfg.Endpoints[0]}, nil
}

type fakeProbe struct {
	etcds            *fakeEtcds
	member, endpoint string
}

// Connection: a fake member that is down fails at once, never slowly, so nothing is asked
// twice.
func (fakeProbe) Connection() (uint64, bool) { return 0, false }

func (p fakeProbe) Version(context.Context) (string, error) {
	p.etcds.mu.Lock()
	defer p.etcds.mu.Unlock()
	for _, d := range p.etcds.dbs {
		switch m := d.members[p.member]; {
		case m == nil:
			continue
		case m.down():
			return "", fmt.Errorf("etcd status of %s: %w", p.endpoint, context.DeadlineExceeded)
		default:
			return m.version, nil
		}
	}
	return "", fmt.Errorf("etcd status of %s: dial tcp: lookup: no such host", p.endpoint)
}

func (fakeProbe) Close() error { return nil }

// defragment shrinks member's file to what is in use and returns its size before and after.
func (d *fakeDB) defragment(member string) (before, after int64) {
	before = d.files[member]
	d.files[member] = d.inUse()
	return before, d.files[member]
}

// fakeKV is a client of one fake etcd cluster. It serves what the scorecard uses, Put,
// Get, Status, Compact and Close; the other methods of etcd.Client are not implemented
// (nil).
type fakeKV struct {
	etcd.Client
	etcds    *fakeEtcds
	endpoint string
	// user is the etcd user of the client's certificate; empty for the operator's client.
	user string
}

// Put writes key, unless NOSPACE is raised or writes fail (writesFailUntil). Like etcd, it applies
// the write that takes a file past the quota and answers it with NOSPACE all the same.
func (c *fakeKV) Put(_ context.Context, key, value string) (err error) {
	if !c.etcds.allowed(c.user, key) {
		return fmt.Errorf("writing etcd key %q: %w", key, rpctypes.ErrPermissionDenied)
	}
	c.etcds.with(c.endpoint, func(d *fakeDB) {
		if time.Now().Before(d.writesFailUntil) {
			err = rpctypes.ErrTimeout
			return
		}
		if d.noSpace {
			err = rpctypes.ErrNoSpace
			return
		}
		d.put(key, value)
		if d.quota > 0 && d.largestFile() > d.quota {
			d.noSpace, err = true, rpctypes.ErrNoSpace
		}
	})
	if err != nil {
		return fmt.Errorf("writing etcd key %q: %w", key, err)
	}
	return nil
}

func (c *fakeKV) Get(_ context.Context, key string) (value string, found bool, err error) {
	if !c.etcds.allowed(c.user, key) {
		return "", false, fmt.Errorf("reading etcd key %q: %w", key, rpctypes.ErrPermissionDenied)
	}
	c.etcds.with(c.endpoint, func(d *fakeDB) { value, found = d.keys[key] })
	return value, found, nil
}

// Status on the client Service reports the largest member file: the Service may reach any
// member. On one member's own endpoint it reports that member's release, and nothing while
// it restarts.
func (c *fakeKV) Status(_ context.Context, endpoint string) (s etcd.MemberStatus, err error) {
	if endpoint != c.endpoint {
		c.etcds.with(c.endpoint, func(d *fakeDB) {
			switch m := d.members[memberOf(endpoint)]; {
			case m == nil:
				err = fmt.Errorf("etcd status of %s: dial tcp: lookup: no such host", endpoint)
			case m.down():
				err = fmt.Errorf("etcd status of %s: %w", endpoint, context.DeadlineExceeded)
			default:
				s = etcd.MemberStatus{Endpoint: endpoint, MemberID: 1, LeaderID: 1, Version: m.version, Revision: d.revision}
			}
		})
		return s, err
	}
	c.etcds.with(c.endpoint, func(d *fakeDB) {
		s = etcd.MemberStatus{Endpoint: endpoint, MemberID: 1, LeaderID: 1, DBSize: d.largestFile(), DBSizeInUse: d.inUse(), Revision: d.revision}
		if d.noSpace {
			s.Errors = []string{"memberID:1 alarm:NOSPACE"}
		}
	})
	return s, nil
}

// Compact drops the whole history: the scorecard compacts at the current revision.
func (c *fakeKV) Compact(_ context.Context, revision int64) (err error) {
	c.etcds.with(c.endpoint, func(d *fakeDB) {
		if revision > d.revision {
			err = fmt.Errorf("compacting etcd at revision %d: %w", revision, rpctypes.ErrFutureRev)
			return
		}
		d.history = 0
	})
	return err
}

func (c *fakeKV) Close() error { return nil }
