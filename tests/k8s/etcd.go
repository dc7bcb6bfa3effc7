package main

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// embeddedEtcd is a running etcd and the level of its logger.
type embeddedEtcd struct {
	etcd  *embed.Etcd
	level zap.AtomicLevel
}

// stop closes etcd. Its listeners report their own closing as errors, with stack traces;
// that is not news, so the logger is muted first.
func (e *embeddedEtcd) stop() {
	e.level.SetLevel(zapcore.FatalLevel)
	e.etcd.Close()
}

// startEtcd runs a single-member etcd on loopback with its data in dir. An existing data dir
// is reopened: etcd replays its write-ahead log, so a killed harness loses nothing it had
// acknowledged.
func startEtcd(dir string, clientPort, peerPort int, verbosity int) (*embeddedEtcd, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "spinel-k8s"
	cfg.Dir = dir
	clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peerURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// No metrics listener: the default would bind a fixed port shared by every harness.
	cfg.ListenMetricsUrls = nil
	// A test cluster is small; a 256 MiB backend is plenty. Scale benchmarks (dra-scale at
	// 10,000 nodes) set SPINEL_ETCD_QUOTA_MIB.
	cfg.QuotaBackendBytes = 256 << 20
	if mib, err := strconv.ParseInt(os.Getenv("SPINEL_ETCD_QUOTA_MIB"), 10, 64); err == nil && mib > 0 {
		cfg.QuotaBackendBytes = mib << 20
	}
	// Each WAL segment is preallocated; 64 MB apiece is a lot for a test cluster whose data
	// dir often lives on tmpfs.
	wal.SegmentSizeBytes = 8 << 20

	level := zap.NewAtomicLevelAt(zapcore.ErrorLevel)
	if verbosity >= 4 {
		level.SetLevel(zapcore.InfoLevel)
	} else if verbosity >= 2 {
		level.SetLevel(zapcore.WarnLevel)
	}
	logConfig := zap.NewProductionConfig()
	logConfig.Level = level
	logConfig.OutputPaths = []string{"stderr"}
	logConfig.ErrorOutputPaths = []string{"stderr"}
	logger, err := logConfig.Build()
	if err != nil {
		return nil, fmt.Errorf("etcd logger: %w", err)
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logger)

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start etcd in %s: %w", dir, err)
	}
	running := &embeddedEtcd{etcd: e, level: level}
	select {
	case <-e.Server.ReadyNotify():
		return running, nil
	case err := <-e.Err():
		running.stop()
		return nil, fmt.Errorf("etcd in %s failed while starting: %w", dir, err)
	case <-time.After(60 * time.Second):
		running.stop()
		return nil, fmt.Errorf("etcd in %s did not become ready within 60s", dir)
	}
}
