package service_test

import (
	"errors"
	"fmt"

	"github.com/personagen/personagen/runtime/service"
)

// A Sender tells a failure that will not pass (a recipient the server refuses for good) from
// one worth retrying by wrapping it with Permanent.
func ExamplePermanent() {
	refused := service.Permanent(errors.New("550 5.1.1 mailbox unavailable"))
	busy := errors.New("451 4.3.0 try again later")
	fmt.Println(service.IsPermanent(refused), service.IsPermanent(fmt.Errorf("send reply 7: %w", refused)))
	fmt.Println(service.IsPermanent(busy), refused)
	// Output:
	// true true
	// false 550 5.1.1 mailbox unavailable
}
