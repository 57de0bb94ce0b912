package envelope

// DefaultControlTopic is the control topic producers write envelopes to
// and the center consumes when neither is configured otherwise (the
// clientlib producer's default, ingest's and the configuration's).
const DefaultControlTopic = "eventcenter.control"
