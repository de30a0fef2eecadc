// A Conveyor plugin in Go, on the NATS client alone: it offers the local agent a tool that counts a
// visitor's visits in the plugin's own storage (the host API), and a `!visits` command that reads the
// count. It is the wire format of libs/plugin-sdk/README.md ("Wire format") written out by hand.
//
//	NATS_URL=nats://127.0.0.1:4222 CONVEYOR_SUBJECT_PREFIX=conveyor PLUGIN_NAME=example/visits go run .
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
)

// token escapes a subject token as Conveyor does: anything but letters, digits, _ and - becomes ~xx.
func token(raw string) string {
	var b strings.Builder
	for _, c := range []byte(raw) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "~%02x", c)
		}
	}
	return b.String()
}

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

type plugin struct {
	nc     *nats.Conn
	name   string
	prefix string
}

func (p *plugin) base() string { return p.prefix + ".v1.plugin" }

// host calls Conveyor's host API and returns the result, or the error Conveyor gave.
func (p *plugin) host(request map[string]any) (map[string]any, error) {
	request["v"] = 1
	request["plugin"] = p.name
	data, _ := json.Marshal(request)
	msg, err := p.nc.Request(p.base()+".host."+token(p.name), data, 30*time.Second)
	if err != nil {
		return nil, err
	}
	var reply struct {
		OK     bool           `json:"ok"`
		Result map[string]any `json:"result"`
		Error  struct{ Code, Message string }
	}
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return nil, err
	}
	if !reply.OK {
		return nil, fmt.Errorf("%s: %s", reply.Error.Code, reply.Error.Message)
	}
	return reply.Result, nil
}

// visits reads a visitor's count from the plugin's storage (0 when none).
func (p *plugin) visits(visitor string) (int, error) {
	result, err := p.host(map[string]any{"op": "storage.get", "key": "visits:" + visitor})
	if err != nil {
		return 0, err
	}
	value, _ := result["value"].(string)
	if value == "" {
		return 0, nil
	}
	return strconv.Atoi(value)
}

func (p *plugin) countVisit(visitor string) (int, error) {
	n, err := p.visits(visitor)
	if err != nil {
		return 0, err
	}
	_, err = p.host(map[string]any{"op": "storage.set", "key": "visits:" + visitor, "value": strconv.Itoa(n + 1)})
	return n + 1, err
}

func respond(msg *nats.Msg, body any) {
	data, _ := json.Marshal(body)
	if err := msg.Respond(data); err != nil {
		log.Printf("respond: %v", err)
	}
}

func respondError(msg *nats.Msg, text string) {
	reply := nats.NewMsg(msg.Reply)
	reply.Header.Set("Conveyor-Plugin-Error", text)
	if err := msg.RespondMsg(reply); err != nil {
		log.Printf("respond: %v", err)
	}
}

// answer handles one call from Conveyor; the Conveyor-Schema header says which kind.
func (p *plugin) answer(msg *nats.Msg) {
	switch msg.Header.Get("Conveyor-Schema") {
	case "PluginToolCall/1":
		var call struct {
			Tool      string         `json:"tool"`
			Arguments map[string]any `json:"arguments"`
		}
		if err := json.Unmarshal(msg.Data, &call); err != nil || call.Tool != "count_visit" {
			respondError(msg, "unknown tool")
			return
		}
		visitor, _ := call.Arguments["visitor"].(string)
		if visitor == "" {
			respond(msg, map[string]any{"v": 1, "content": "visitor is required", "is_error": true})
			return
		}
		n, err := p.countVisit(visitor)
		if err != nil {
			respond(msg, map[string]any{"v": 1, "content": err.Error(), "is_error": true})
			return
		}
		respond(msg, map[string]any{"v": 1, "content": fmt.Sprintf("%s has visited %d time(s)", visitor, n)})
	case "PluginCommandCall/1":
		var call struct {
			Params   []string `json:"params"`
			SenderID string   `json:"sender_id"`
		}
		if err := json.Unmarshal(msg.Data, &call); err != nil {
			respondError(msg, "bad command call")
			return
		}
		visitor := call.SenderID
		if len(call.Params) > 0 && call.Params[0] != "" {
			visitor = call.Params[0]
		}
		n, err := p.visits(visitor)
		if err != nil {
			respondError(msg, err.Error())
			return
		}
		respond(msg, map[string]any{"v": 1, "text": fmt.Sprintf("%s: %d visit(s)", visitor, n)})
	default:
		respondError(msg, "this plugin answers no events")
	}
}

func main() {
	p := &plugin{name: env("PLUGIN_NAME", "example/visits"), prefix: env("CONVEYOR_SUBJECT_PREFIX", "conveyor")}
	inboxPrefix := "_INBOX_" + strings.ReplaceAll(p.prefix, "-", "_") + ".plugin." + token(p.name)
	nc, err := nats.Connect(env("NATS_URL", nats.DefaultURL), nats.Name("plugin "+p.name), nats.CustomInboxPrefix(inboxPrefix),
		nats.UserInfo(os.Getenv("NATS_USER"), os.Getenv("NATS_PASSWORD")))
	if err != nil {
		log.Fatalf("connect: %v", err)
	}
	p.nc = nc
	registration, _ := json.Marshal(map[string]any{
		"v": 1, "name": p.name, "version": "1.0.0", "instanceId": fmt.Sprintf("go-%d", os.Getpid()),
		"events": []string{}, "priority": 0, "timeoutMs": 10000, "ttlMs": 6000,
		"tools": []map[string]any{{
			"name": "count_visit", "description": "Counts a visit of a visitor and says how many they made",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"visitor": map[string]any{"type": "string"}}, "required": []string{"visitor"}},
		}},
		"commands": []map[string]any{{"name": "visits", "help": "how many visits a visitor made", "adminOnly": false}},
	})
	announce := func() {
		if err := nc.Publish(p.base()+".heartbeat", registration); err != nil {
			log.Printf("heartbeat: %v", err)
		}
	}
	if _, err := nc.Subscribe(p.base()+".discover", func(*nats.Msg) { announce() }); err != nil {
		log.Fatalf("subscribe: %v", err)
	}
	// Instances of one plugin share its calls: the queue group is the plugin's name.
	if _, err := nc.QueueSubscribe(p.base()+".call."+token(p.name), p.name, func(msg *nats.Msg) { go p.answer(msg) }); err != nil {
		log.Fatalf("subscribe: %v", err)
	}
	if err := nc.Flush(); err != nil {
		log.Fatalf("flush: %v", err)
	}
	announce()
	fmt.Println("ready")
	beat := time.NewTicker(2 * time.Second)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	for {
		select {
		case <-beat.C:
			announce()
		case <-stop:
			if err := nc.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
				log.Printf("drain: %v", err)
			}
			return
		}
	}
}
