package center

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/forwarder/kafka"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/producerapi"
)

// producerAPI is the producer HTTP API on its own listener
// (ingress.listen), with its own Kafka producer.
type producerAPI struct {
	client   *kgo.Client
	server   *http.Server
	listener net.Listener
	served   chan error
}

// newProducerAPI builds the producer API when ingress.listen is set; nil
// otherwise.
func (c *Center) newProducerAPI(cfg config.Config, opt Options) (*producerAPI, error) {
	in := cfg.Ingress
	if in.Listen == "" && opt.IngressListener == nil {
		return nil, nil
	}
	auth, err := cfg.Kafka.Auth.Options()
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	// Control records have one reader, the center: snappy unless
	// kafka.compression says otherwise (kafkarec.ControlCompression).
	setting := cfg.Kafka.Compression
	if strings.TrimSpace(setting) == "" {
		setting = kafkarec.ControlCompression
	}
	compression, err := kafkarec.CompressionOpt(setting)
	if err != nil {
		return nil, fmt.Errorf("kafka.compression: %w", err)
	}
	log := opt.Logger.With("component", "ingress")
	kopts := append(append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Kafka.Brokers...),
		kgo.ClientID(cfg.Kafka.ClientID + "-ingress"),
		// As clientlib's producer: acks=all and its partitioner (Kafka's
		// murmur2 of the record key, or of bizID:orderKey for an ordered
		// message), so one message's envelopes share a partition whichever
		// way they came.
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kafkarec.Partitioner()),
		kgo.ProducerLinger(time.Millisecond),
		// A whole batch request of the largest envelopes fits.
		kgo.ProducerBatchMaxBytes(int32(min(max(cfg.Ingest.MaxPayloadBytes+ingest.RecordOverhead+4<<10, kafka.DefaultBatchBytes), kafka.MaxBatchBytes))),
		compression,
		kgo.WithLogger(kafka.ClientLogger(log)),
	}, auth...), opt.KafkaOptions...)
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("ingress: kafka client: %w", err)
	}
	pc := cfg.ProducerAPIConfig()
	pc.Producer, pc.Store = cl, c.Store
	pc.CheckTopic, pc.Scheduling = targetTopicCheck(cfg.Forward), c.Scheduling
	pc.TokenSource = c.secrets.ProducerTokens
	pc.Now, pc.Logger, pc.Registerer = opt.Now, log, c.registerer
	h, err := producerapi.New(pc)
	if err != nil {
		cl.Close()
		return nil, err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(10*time.Second, in.ReadTimeout),
		ReadTimeout:       in.ReadTimeout,
		WriteTimeout:      in.ProduceTimeout + 10*time.Second,
		IdleTimeout:       in.IdleTimeout,
		// Forwarded headers and the forward key are bounded by
		// ingest.RecordOverhead (64 KiB) as on Kafka; room for the rest.
		MaxHeaderBytes: ingest.RecordOverhead + 32<<10,
	}
	if in.TLS.CertFile != "" {
		if srv.TLSConfig, err = producerapi.TLSConfig(in.TLS.CertFile, in.TLS.KeyFile, log); err != nil {
			cl.Close()
			return nil, err
		}
	}
	return &producerAPI{client: cl, server: srv, listener: opt.IngressListener}, nil
}

// start listens (unless a listener was given) and serves.
func (p *producerAPI) start(listen string) error {
	if p.listener == nil {
		l, err := net.Listen("tcp", listen)
		if err != nil {
			return fmt.Errorf("listen on ingress.listen %s: %w", listen, err)
		}
		p.listener = l
	}
	p.served = make(chan error, 1)
	go func() {
		if p.server.TLSConfig != nil {
			p.served <- p.server.ServeTLS(p.listener, "", "")
			return
		}
		p.served <- p.server.Serve(p.listener)
	}()
	return nil
}

// stop ends the server (requests in flight finish) and closes the client.
func (p *producerAPI) stop(ctx context.Context) error {
	var err error
	if p.served != nil {
		err = p.server.Shutdown(ctx)
		if serr := <-p.served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, fmt.Errorf("serve: %w", serr))
		}
		p.served = nil
	}
	p.client.Close()
	return err
}

// IngressAddr is the producer API's address once started ("" when off).
func (c *Center) IngressAddr() string {
	if c.producerAPI == nil || c.producerAPI.listener == nil {
		return ""
	}
	return c.producerAPI.listener.Addr().String()
}
