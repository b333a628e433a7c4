package pagetoken_test

import (
	"errors"
	"fmt"
	"slices"

	"github.com/csikit/csikit/internal/pagetoken"
)

// listVolumes pages a sorted listing the way a ListVolumes handler does:
// resume strictly after the cursor in starting_token, and hand out a token
// for the last ID returned when more remain.
func listVolumes(codec *pagetoken.Codec, all []string, startingToken string, maxEntries int) ([]string, string, error) {
	start := 0
	if startingToken != "" {
		after, err := codec.Decode(startingToken, "ListVolumes", "")
		if err != nil {
			return nil, "", err // the server answers ABORTED
		}
		start, _ = slices.BinarySearch(all, after)
		if start < len(all) && all[start] == after {
			start++
		}
	}
	end := min(start+maxEntries, len(all))
	page := all[start:end]
	if end == len(all) {
		return page, "", nil
	}
	next, err := codec.Encode("ListVolumes", "", page[len(page)-1])
	return page, next, err
}

func Example() {
	codec := pagetoken.New(nil) // random per-process key
	volumes := []string{"vol-a", "vol-b", "vol-c", "vol-d", "vol-e"}

	token := ""
	for {
		page, next, err := listVolumes(codec, volumes, token, 2)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(page)
		if next == "" {
			break
		}
		token = next
	}

	// A token for another listing, or a made-up one, is refused.
	snapToken, _ := codec.Encode("ListSnapshots", "", "vol-b")
	_, _, err := listVolumes(codec, volumes, snapToken, 2)
	fmt.Println(errors.Is(err, pagetoken.ErrInvalid), err)
	// Output:
	// [vol-a vol-b]
	// [vol-c vol-d]
	// [vol-e]
	// true invalid pagination token: not issued by this plugin for this listing
}
