package observer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"strconv"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/observer"
	"github.com/mailroom-go/mailroom/remote"
)

// grainsPanel is what another package (say, a grain layer) gives the
// observer: a name and a function returning tables. The observer draws
// them on the page and serves them at /api/panels/{name}.
func grainsPanel(activations map[string]int) observer.Panel {
	return observer.Panel{
		Name: "grains",
		Data: func(context.Context) (observer.PanelData, error) {
			t := observer.Table{Title: "activations per kind", Columns: []string{"kind", "activations"}}
			for _, kind := range []string{"account", "cart"} {
				t.Rows = append(t.Rows, []string{kind, strconv.Itoa(activations[kind])})
			}
			return observer.PanelData{Tables: []observer.Table{t}}, nil
		},
	}
}

// An extra panel, registered through Options.Panels by a package the
// observer does not import.
func ExamplePanel() {
	sys, err := actor.Start(actor.Config{Name: "node-1", Logger: actor.DiscardLogger()})
	if err != nil {
		panic(err)
	}
	defer sys.Stop(context.Background())
	node, err := remote.Start(context.Background(), sys, remote.Config{Cookie: "observer-example-cookie"})
	if err != nil {
		panic(err)
	}
	h := observer.Handler(node, observer.Options{Panels: []observer.Panel{
		grainsPanel(map[string]int{"account": 12, "cart": 3}),
	}})

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/panels/grains", nil))
	body, _ := io.ReadAll(rec.Body)
	var v observer.PanelView
	if err := json.Unmarshal(body, &v); err != nil {
		panic(err)
	}
	t := v.Tables[0]
	fmt.Println(rec.Code, v.Name, t.Title, t.Columns, t.Rows)
	// Output:
	// 200 grains activations per kind [kind activations] [[account 12] [cart 3]]
}
