package csisuite

import (
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// ExpectCode asserts an error with the given code.
func ExpectCode(err error, code codes.Code, what string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "%s: want %s, got success", what, code)
	Expect(status.Code(err)).To(Equal(code), "%s: want %s, got %v", what, code, err)
}

// SameAnswer asserts that two responses are equal, printing both when they are not.
func SameAnswer(what string, first, again proto.Message) {
	GinkgoHelper()
	Expect(proto.Equal(first, again)).To(BeTrue(), "%s answered differently when repeated:\nfirst: %s\nagain: %s",
		what, prototext.Format(first), prototext.Format(again))
}

// Concurrently makes n identical calls at once and returns every answer.
func Concurrently[T proto.Message](n int, call func() (T, error)) ([]T, []error) {
	res := make([]T, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res[i], errs[i] = call()
		}()
	}
	close(start)
	wg.Wait()
	return res, errs
}

// OneProceeds asserts the outcome of identical concurrent calls: each succeeded with the same
// answer or was ABORTED (the operation was pending), and at least one succeeded. It returns a
// successful answer.
func OneProceeds[T proto.Message](what string, res []T, errs []error) T {
	GinkgoHelper()
	var first T
	ok := 0
	for i, err := range errs {
		if err != nil {
			Expect(status.Code(err)).To(Equal(codes.Aborted), "%s: concurrent call %d failed with %v; want success or ABORTED", what, i, err)
			continue
		}
		if ok == 0 {
			first = res[i]
		} else {
			SameAnswer(what+" (concurrent)", first, res[i])
		}
		ok++
	}
	Expect(ok).To(BeNumerically(">", 0), "%s: all %d concurrent calls were ABORTED; the one holding the operation must succeed", what, len(errs))
	return first
}
