// Package service runs a host's personas as one long-lived process of which any number of
// replicas share one store: it answers pending mail, fires responsibilities, sends replies,
// and takes mail from its receivers, until its context ends.
//
// Start from New and Config: a host hands it its personas (the generated package's Personas
// function returns them), a store, its models (Models: a persona whose spec names a provider is
// served by that provider's adapter, every other one by Models.Default), its receivers and its
// sender; Run runs it, Handler serves its health, readiness and metrics endpoints, and
// NotifyContext turns SIGINT/SIGTERM into a graceful stop (a second signal calls Kill).
//
// A transport implements Receiver (mail in: it acknowledges a message to its source only once
// Deliverer.Deliver committed it) or Sender (replies out: an error wrapped with Permanent is not
// retried). Dir and DirSender are the directory ones, for local use and tests.
//
// All work is rows of the store (runtime/store, pending work): a thread with mail to answer, a
// due fire, a reply to send, each claimed with one statement under a lease, so a process keeps
// nothing a crash could lose. How the work is shared, coalesced, retried and resumed, the
// lifecycle, the endpoints, the metrics and the logs are docs/service.md in the repository.
package service
