// Package service runs a host's personas as one long-lived process of which any number of
// replicas share one store. Its transports are small interfaces: a Receiver brings mail in
// through a Deliverer, which acknowledges a message only once it is committed; a Sender sends
// the rendered replies of the outbox, telling permanent failures (Permanent) from transient
// ones.
//
// Start from Receiver and Sender, the interfaces a transport implements.
package service
