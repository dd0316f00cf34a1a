package service

import "context"

// scheduleLoop runs the scheduler: its runs live on work, and when ctx ends the scheduler stops
// claiming and lets them finish within the grace period.
func (s *Service) scheduleLoop(ctx, work context.Context) {
	if err := s.sched.Start(work); err != nil {
		s.log.Error("the scheduler did not start", "error", err)
		return
	}
	<-ctx.Done()
	stop, cancel := context.WithTimeout(work, s.grace)
	defer cancel()
	if err := s.sched.Stop(stop); err != nil {
		s.log.Warn("the scheduler stopped with runs cut off", "error", err)
	}
}
