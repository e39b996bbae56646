package llm

import (
	"ctxlab/activities/api/errkind"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/openai/openai-go/v3/option"
)

// maxAnswerBytes bounds the HTTP body of a completion, read before it is decoded: a chat answer of max_tokens
// tokens is a few hundred KB at most, and an endpoint that sends more (a 50 MB answer took a worker to 790 MB)
// would otherwise be held whole, several times over, by the decoder.
const maxAnswerBytes = 16 << 20

// errAnswerTooLarge is the read error of a body past maxAnswerBytes.
var errAnswerTooLarge = errors.New("answer too large")

// capAnswer is the client middleware that cuts a completion's body at maxAnswerBytes: a body announced larger is
// refused before it is read, one that runs past the cap fails its read with errAnswerTooLarge.
func capAnswer(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil || res.Body == nil {
		return res, err
	}
	if res.ContentLength > maxAnswerBytes {
		res.Body.Close()
		res.Body = io.NopCloser(errReader{errAnswerTooLarge})
		return res, nil
	}
	res.Body = &cappedBody{ReadCloser: res.Body, left: maxAnswerBytes}
	return res, nil
}

type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte past the cap tells a body of exactly the cap from a longer one
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return 0, errAnswerTooLarge
	}
	return n, err
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// answerTooLarge is the error of a call whose answer was refused at the cap (err is the client's), nil for any other.
func answerTooLarge(err error, hres *http.Response) *Error {
	if !errors.Is(err, errAnswerTooLarge) {
		return nil
	}
	return &Error{Kind: errkind.BadResponse, Status: statusOf(hres), Msg: fmt.Sprintf(
		"the endpoint's answer is larger than ctxlab's cap of %d MiB on an answer: refused at the HTTP read, before "+
			"decoding (set the model's max_tokens so that the endpoint stops sooner)", maxAnswerBytes>>20)}
}
