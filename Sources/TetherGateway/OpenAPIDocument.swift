/// The OpenAPI 3.1 document of the v1 API, served as is at `GET /v1/openapi.json`.
/// Tests/Gateway/api-check.sh validates it and runs schemathesis against a live gateway with it.
enum OpenAPIDocument {
    static let json = #"""
{
  "openapi": "3.1.0",
  "info": {
    "title": "Tether gateway",
    "version": "1",
    "description": "`tether serve`: one API over every configured profile, backed by a durable event log. Events are schema-v1 JSON lines (see the project's adapters.md); every event in the log has a `seq` that only grows, so a client resumes with `Last-Event-ID` (or `since`) and gets every event it missed, once, in order. Errors are RFC 7807 problem+json with a `code`. Without tokens (loopback only), a request carrying another site's `Origin`, or a `Host` that is not an IP address, localhost or public_url's host, gets 403. Without tokens, a request a browser marks `Sec-Fetch-Site: cross-site` or `same-site` gets 403 too. Every request carries exactly one `Host` header (else 400). A client that sent more than 5 wrong tokens waits before each further try (429 with `Retry-After`); its tokens are not compared meanwhile. An id in a path is one segment: `.` and `..`, whole or as a part of a composite id (`A~B`), get 400. Login cookies end after `login_idle_days` unused, `login_lifetime_days` after the login, or past `max_logins`, and the event streams opened with one end with it."
  },
  "servers": [
    {
      "url": "/"
    }
  ],
  "security": [
    {
      "bearer": []
    },
    {
      "cookie": []
    }
  ],
  "paths": {
    "/": {
      "get": {
        "summary": "The page: watch sessions and answer approvals from a phone's browser (no auth; it logs in with POST /v1/login).",
        "operationId": "page",
        "responses": {
          "200": {
            "description": "The page's HTML.",
            "content": {
              "text/html": {
                "schema": {
                  "type": "string"
                }
              }
            }
          }
        },
        "security": []
      }
    },
    "/app.js": {
      "get": {
        "summary": "The page's script (no auth).",
        "operationId": "pageScript",
        "responses": {
          "200": {
            "description": "The page's JavaScript.",
            "content": {
              "text/javascript": {
                "schema": {
                  "type": "string"
                }
              }
            }
          }
        },
        "security": []
      }
    },
    "/app.css": {
      "get": {
        "summary": "The page's style sheet (no auth).",
        "operationId": "pageStyle",
        "responses": {
          "200": {
            "description": "The page's CSS.",
            "content": {
              "text/css": {
                "schema": {
                  "type": "string"
                }
              }
            }
          }
        },
        "security": []
      }
    },
    "/icon.svg": {
      "get": {
        "summary": "The page's icon (no auth).",
        "operationId": "pageIcon",
        "responses": {
          "200": {
            "description": "The page's icon.",
            "content": {
              "image/svg+xml": {
                "schema": {
                  "type": "string"
                }
              }
            }
          }
        },
        "security": []
      }
    },
    "/v1/health": {
      "get": {
        "summary": "Liveness and version (no auth).",
        "operationId": "health",
        "responses": {
          "200": {
            "description": "The gateway is up.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Health"
                }
              }
            }
          }
        },
        "security": []
      }
    },
    "/v1/login": {
      "post": {
        "summary": "Exchange a token for an HttpOnly session cookie (no auth).",
        "operationId": "login",
        "responses": {
          "200": {
            "description": "Logged in; the response sets the tether_session cookie.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/AuthState"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "413": {
            "$ref": "#/components/responses/BodyTooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedMediaType"
          },
          "429": {
            "$ref": "#/components/responses/TooManyRequests"
          }
        },
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "required": [
                  "token"
                ],
                "properties": {
                  "token": {
                    "type": "string",
                    "minLength": 1
                  }
                }
              }
            }
          }
        },
        "security": []
      }
    },
    "/v1/logout": {
      "post": {
        "summary": "Clear the session cookie and revoke its value.",
        "operationId": "logout",
        "responses": {
          "200": {
            "description": "Logged out.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/AuthState"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "413": {
            "$ref": "#/components/responses/BodyTooLarge"
          },
          "429": {
            "$ref": "#/components/responses/TooManyRequests"
          }
        },
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object"
              }
            }
          }
        }
      }
    },
    "/v1/openapi.json": {
      "get": {
        "summary": "This document.",
        "operationId": "openapi",
        "responses": {
          "200": {
            "description": "The OpenAPI 3.1 document.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "429": {
            "$ref": "#/components/responses/TooManyRequests"
          }
        }
      }
    },
    "/v1/profiles": {
      "get": {
        "summary": "The served profiles, their capabilities and connection state.",
        "operationId": "listProfiles",
        "responses": {
          "200": {
            "description": "The profiles.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "array",
                  "items": {
                    "$ref": "#/components/schemas/Profile"
                  }
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "429": {
            "$ref": "#/components/responses/TooManyRequests"
          }
        }
      }
    },
    "/v1/events": {
      "get": {
        "summary": "The event log: SSE (replay after the cursor, then live), or long-poll JSON with format=json.",
        "operationId": "events",
        "responses": {
          "200": {
            "description": "An SSE stream: each event is `id: SEQ` and one `data:` line holding the schema-v1 JSON line; a comment heartbeat every 15 s. Without a cursor the stream starts with an id-only block carrying the current last seq. A cursor older than retention (or trimmed while the replay runs), or past the end of the log (a log that was reset), gets an `error` event whose data.code is `cursor_expired`, then the oldest kept events. With format=json: one batch.",
            "content": {
              "text/event-stream": {
                "schema": {
                  "type": "string"
                }
              },
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/EventBatch"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "429": {
            "$ref": "#/components/responses/TooManyRequests"
          }
        },
        "parameters": [
          {
            "name": "since",
            "in": "query",
            "required": false,
            "description": "Resume after this seq; the Last-Event-ID header wins over it.",
            "schema": {
              "type": "integer",
              "minimum": 0,
              "format": "int64"
            }
          },
          {
            "name": "Last-Event-ID",
            "in": "header",
            "required": false,
            "description": "The seq of the last event the client saw.",
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "format",
            "in": "query",
            "required": false,
            "description": "json: long-poll instead of SSE.",
            "schema": {
              "type": "string",
              "enum": [
                "json"
              ]
            }
          },
          {
            "name": "limit",
            "in": "query",
            "required": false,
            "description": "format=json: at most this many events.",
            "schema": {
              "type": "integer",
              "minimum": 1,
              "maximum": 1000,
              "default": 100
            }
          },
          {
            "name": "wait",
            "in": "query",
            "required": false,
            "description": "format=json: wait up to this many seconds for the first new event.",
            "schema": {
              "type": "integer",
              "minimum": 0,
              "maximum": 60,
              "default": 0
            }
          },
          {
            "name": "profile",
            "in": "query",
            "required": false,
            "description": "Only these profiles (repeatable).",
            "schema": {
              "type": "array",
              "items": {
                "type": "string"
              }
            },
            "explode": true,
            "style": "form"
          },
          {
            "name": "session",
            "in": "query",
            "required": false,
            "description": "Only this session.",
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "type",
            "in": "query",
            "required": false,
            "description": "Only these event types (repeatable); a value such as `approval.` matches the family.",
            "schema": {
              "type": "array",
              "items": {
                "type": "string"
              }
            },
            "explode": true,
            "style": "form"
          }
        ]
      }
    },
    "/v1/approvals": {
      "get": {
        "summary": "Pending approvals across profiles, as approval.requested events.",
        "operationId": "pendingApprovals",
        "responses": {
          "200": {
            "description": "The pending approvals. A profile whose backend could not be asked is left out and named in the Tether-Unavailable-Profiles header (a client keeps what it knew of that profile's approvals).",
            "headers": {
              "Tether-Unavailable-Profiles": {
                "description": "Comma-separated names of the profiles whose pending approvals could not be read, each percent-encoded (UTF-8; a name may hold a comma); absent when every backend answered.",
                "schema": {
                  "type": "string"
                }
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "type": "array",
                  "items": {
                    "$ref": "#/components/schemas/Event"
                  }
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "422": {
            "$ref": "#/components/responses/BackendRefused"
          },
          "429": {
            "$ref": "#/components/responses/TooManyRequests"
          },
          "502": {
            "$ref": "#/components/responses/BackendUnavailable"
          },
          "504": {
            "$ref": "#/components/responses/BackendTimedOut"
          }
        },
        "parameters": [
          {
            "name": "profile",
            "in": "query",
            "required": false,
            "description": "Only these profiles (repeatable).",
            "schema": {
              "type": "array",
              "items": {
                "type": "string"
              }
            },
            "explode": true,
            "style": "form"
          }
        ]
      }
    },
    "/v1/profiles/{profile}/sessions": {
      "parameters": [
        {
          "name": "profile",
          "in": "path",
          "required": true,
          "description": "A served profile's name.",
          "schema": {
            "type": "string"
          }
        }
      ],
      "get": {
        "summary": "The profile's sessions.",
        "operationId": "listSessions",
        "responses": {
          "200": {
            "description": "The sessions.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "array",
                  "items": {
                    "$ref": "#/components/schemas/Session"
                  }
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "422": {
            "$ref": "#/components/responses/BackendRefused"
          },
          "429": {
            "$ref": "#/components/responses/TooManyRequests"
          },
          "502": {
            "$ref": "#/components/responses/BackendUnavailable"
          },
          "504": {
            "$ref": "#/components/responses/BackendTimedOut"
          }
        }
      },
      "post": {
        "summary": "Create a session.",
        "operationId": "createSession",
        "responses": {
          "201": {
            "description": "The new session.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Session"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "413": {
            "$ref": "#/components/responses/BodyTooLarge"
          },
          "422": {
            "$ref": "#/components/responses/BackendRefused"
          },
          "429": {
            "$ref": "#/components/responses/TooManyRequests"
          },
          "502": {
            "$ref": "#/components/responses/BackendUnavailable"
          },
          "504": {
            "$ref": "#/components/responses/BackendTimedOut"
          }
        },
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "properties": {
                  "title": {
                    "type": "string"
                  },
                  "directory": {
                    "type": "string"
                  }
                }
              }
            }
          }
        }
      }
    },
    "/v1/profiles/{profile}/sessions/{session}": {
      "parameters": [
        {
          "name": "profile",
          "in": "path",
          "required": true,
          "description": "A served profile's name.",
          "schema": {
            "type": "string"
          }
        },
        {
          "name": "session",
          "in": "path",
          "required": true,
          "description": "A session id, as the backend names it.",
          "schema": {
            "type": "string"
          }
        }
      ],
      "get": {
        "summary": "One session.",
        "operationId": "showSession",
        "responses": {
          "200": {
            "description": "The session.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Session"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "422": {
            "$ref": "#/components/responses/BackendRefused"
          },
          "429": {
            "$ref": "#/components/responses/TooManyRequests"
          },
          "502": {
            "$ref": "#/components/responses/BackendUnavailable"
          },
          "504": {
            "$ref": "#/components/responses/BackendTimedOut"
          }
        }
      }
    },
    "/v1/profiles/{profile}/sessions/{session}/history": {
      "parameters": [
        {
          "name": "profile",
          "in": "path",
          "required": true,
          "description": "A served profile's name.",
          "schema": {
            "type": "string"
          }
        },
        {
          "name": "session",
          "in": "path",
          "required": true,
          "description": "A session id, as the backend names it.",
          "schema": {
            "type": "string"
          }
        }
      ],
      "get": {
        "summary": "Past turns of the session, as events.",
        "operationId": "history",
        "responses": {
          "200": {
            "description": "The events.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "array",
                  "items": {
                    "$ref": "#/components/schemas/Event"
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "422": {
            "$ref": "#/components/responses/BackendRefused"
          },
          "429": {
            "$ref": "#/components/responses/TooManyRequests"
          },
          "502": {
            "$ref": "#/components/responses/BackendUnavailable"
          },
          "504": {
            "$ref": "#/components/responses/BackendTimedOut"
          }
        },
        "parameters": [
          {
            "name": "limit",
            "in": "query",
            "required": false,
            "description": "At most this many turns.",
            "schema": {
              "type": "integer",
              "minimum": 1,
              "maximum": 100000
            }
          }
        ]
      }
    },
    "/v1/profiles/{profile}/sessions/{session}/turns": {
      "parameters": [
        {
          "name": "profile",
          "in": "path",
          "required": true,
          "description": "A served profile's name.",
          "schema": {
            "type": "string"
          }
        },
        {
          "name": "session",
          "in": "path",
          "required": true,
          "description": "A session id, as the backend names it.",
          "schema": {
            "type": "string"
          }
        }
      ],
      "post": {
        "summary": "Start a turn; its events arrive on /v1/events.",
        "operationId": "startTurn",
        "responses": {
          "202": {
            "description": "Started.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/TurnReceipt"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "413": {
            "$ref": "#/components/responses/BodyTooLarge"
          },
          "422": {
            "$ref": "#/components/responses/BackendRefused"
          },
          "429": {
            "$ref": "#/components/responses/TooManyRequests"
          },
          "502": {
            "$ref": "#/components/responses/BackendUnavailable"
          },
          "504": {
            "$ref": "#/components/responses/BackendTimedOut"
          }
        },
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "required": [
                  "text"
                ],
                "properties": {
                  "text": {
                    "type": "string",
                    "minLength": 1
                  },
                  "model": {
                    "type": "string"
                  }
                }
              }
            }
          }
        }
      }
    },
    "/v1/profiles/{profile}/sessions/{session}/abort": {
      "parameters": [
        {
          "name": "profile",
          "in": "path",
          "required": true,
          "description": "A served profile's name.",
          "schema": {
            "type": "string"
          }
        },
        {
          "name": "session",
          "in": "path",
          "required": true,
          "description": "A session id, as the backend names it.",
          "schema": {
            "type": "string"
          }
        }
      ],
      "post": {
        "summary": "Stop the running turn.",
        "operationId": "abort",
        "responses": {
          "202": {
            "description": "Asked to stop.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "session"
                  ],
                  "properties": {
                    "session": {
                      "type": "string"
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "422": {
            "$ref": "#/components/responses/BackendRefused"
          },
          "429": {
            "$ref": "#/components/responses/TooManyRequests"
          },
          "502": {
            "$ref": "#/components/responses/BackendUnavailable"
          },
          "504": {
            "$ref": "#/components/responses/BackendTimedOut"
          }
        }
      }
    },
    "/v1/profiles/{profile}/approvals/{approval}": {
      "parameters": [
        {
          "name": "profile",
          "in": "path",
          "required": true,
          "description": "A served profile's name.",
          "schema": {
            "type": "string"
          }
        },
        {
          "name": "approval",
          "in": "path",
          "required": true,
          "description": "The approval's id (data.id of approval.requested).",
          "schema": {
            "type": "string"
          }
        }
      ],
      "post": {
        "summary": "Answer an approval once. The same decision again gets 200; another one after it was answered gets 409 with the first decision.",
        "operationId": "answerApproval",
        "responses": {
          "200": {
            "description": "The approval.resolved event.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Event"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "409": {
            "$ref": "#/components/responses/Conflict"
          },
          "413": {
            "$ref": "#/components/responses/BodyTooLarge"
          },
          "422": {
            "$ref": "#/components/responses/BackendRefused"
          },
          "429": {
            "$ref": "#/components/responses/TooManyRequests"
          },
          "502": {
            "$ref": "#/components/responses/BackendUnavailable"
          },
          "504": {
            "$ref": "#/components/responses/BackendTimedOut"
          }
        },
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "required": [
                  "decision"
                ],
                "properties": {
                  "decision": {
                    "type": "string",
                    "enum": [
                      "accept",
                      "accept_for_session",
                      "accept_with_amendment",
                      "decline",
                      "cancel"
                    ]
                  },
                  "amendment": {
                    "type": "array",
                    "items": {
                      "type": "string"
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/v1/profiles/{profile}/notifications": {
      "parameters": [
        {
          "name": "profile",
          "in": "path",
          "required": true,
          "description": "A served profile's name.",
          "schema": {
            "type": "string"
          }
        }
      ],
      "get": {
        "summary": "The notification backend's notifications.",
        "operationId": "listNotifications",
        "responses": {
          "200": {
            "description": "The notifications.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "array",
                  "items": {
                    "type": "object"
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "422": {
            "$ref": "#/components/responses/BackendRefused"
          },
          "429": {
            "$ref": "#/components/responses/TooManyRequests"
          },
          "502": {
            "$ref": "#/components/responses/BackendUnavailable"
          },
          "504": {
            "$ref": "#/components/responses/BackendTimedOut"
          }
        },
        "parameters": [
          {
            "name": "unread",
            "in": "query",
            "required": false,
            "description": "Only unread ones.",
            "schema": {
              "type": "boolean"
            }
          },
          {
            "name": "limit",
            "in": "query",
            "required": false,
            "description": "At most this many.",
            "schema": {
              "type": "integer",
              "minimum": 1,
              "maximum": 1000
            }
          }
        ]
      }
    },
    "/v1/profiles/{profile}/notifications/{notification}/read": {
      "parameters": [
        {
          "name": "profile",
          "in": "path",
          "required": true,
          "description": "A served profile's name.",
          "schema": {
            "type": "string"
          }
        },
        {
          "name": "notification",
          "in": "path",
          "required": true,
          "description": "A notification's id.",
          "schema": {
            "type": "string"
          }
        }
      ],
      "post": {
        "summary": "Mark one notification read.",
        "operationId": "readNotification",
        "responses": {
          "200": {
            "description": "The backend's answer.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "422": {
            "$ref": "#/components/responses/BackendRefused"
          },
          "429": {
            "$ref": "#/components/responses/TooManyRequests"
          },
          "502": {
            "$ref": "#/components/responses/BackendUnavailable"
          },
          "504": {
            "$ref": "#/components/responses/BackendTimedOut"
          }
        }
      }
    },
    "/v1/profiles/{profile}/notifications/read-all": {
      "parameters": [
        {
          "name": "profile",
          "in": "path",
          "required": true,
          "description": "A served profile's name.",
          "schema": {
            "type": "string"
          }
        }
      ],
      "post": {
        "summary": "Mark every notification read.",
        "operationId": "readAllNotifications",
        "responses": {
          "200": {
            "description": "The backend's answer.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "422": {
            "$ref": "#/components/responses/BackendRefused"
          },
          "429": {
            "$ref": "#/components/responses/TooManyRequests"
          },
          "502": {
            "$ref": "#/components/responses/BackendUnavailable"
          },
          "504": {
            "$ref": "#/components/responses/BackendTimedOut"
          }
        }
      }
    }
  },
  "components": {
    "securitySchemes": {
      "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "One of the [serve] table's tokens."
      },
      "cookie": {
        "type": "apiKey",
        "in": "cookie",
        "name": "tether_session",
        "description": "Set by POST /v1/login. State-changing requests authenticated by it must send Content-Type: application/json."
      }
    },
    "responses": {
      "BadRequest": {
        "description": "bad request",
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "Unauthorized": {
        "description": "authentication required",
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "Forbidden": {
        "description": "forbidden",
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "NotFound": {
        "description": "not found",
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "Conflict": {
        "description": "conflict",
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "BodyTooLarge": {
        "description": "body too large",
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "BackendRefused": {
        "description": "the profile's backend cannot do this (code unsupported) or refused it (code failed)",
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "BackendUnavailable": {
        "description": "the backend is unavailable",
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "BackendTimedOut": {
        "description": "the backend timed out",
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "TooManyRequests": {
        "description": "too many wrong tokens from this client: wait the seconds Retry-After says",
        "headers": {
          "Retry-After": {
            "description": "seconds to wait before the next try",
            "schema": {
              "type": "integer",
              "minimum": 1
            }
          }
        },
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "UnsupportedMediaType": {
        "description": "the body must be application/json",
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      }
    },
    "schemas": {
      "Problem": {
        "type": "object",
        "required": [
          "type",
          "title",
          "status",
          "detail",
          "code"
        ],
        "properties": {
          "type": {
            "type": "string"
          },
          "title": {
            "type": "string"
          },
          "status": {
            "type": "integer"
          },
          "detail": {
            "type": "string"
          },
          "code": {
            "type": "string",
            "description": "unauthorized, forbidden, not_found, unsupported, conflict, bad_request, unavailable, timeout, failed, internal"
          },
          "decision": {
            "type": "string",
            "description": "409 on an approval: the decision it was answered with."
          }
        }
      },
      "Health": {
        "type": "object",
        "required": [
          "status",
          "version"
        ],
        "properties": {
          "status": {
            "const": "ok"
          },
          "version": {
            "type": "string"
          }
        }
      },
      "AuthState": {
        "type": "object",
        "required": [
          "authenticated"
        ],
        "properties": {
          "authenticated": {
            "type": "boolean"
          }
        }
      },
      "Profile": {
        "type": "object",
        "required": [
          "name",
          "backend",
          "capabilities",
          "connection"
        ],
        "properties": {
          "name": {
            "type": "string"
          },
          "backend": {
            "type": "string",
            "enum": [
              "codex-worker",
              "opencode",
              "codexmonitor",
              "notification"
            ]
          },
          "capabilities": {
            "type": "array",
            "items": {
              "type": "string"
            }
          },
          "connection": {
            "type": "object",
            "required": [
              "state"
            ],
            "properties": {
              "state": {
                "type": "string"
              }
            }
          }
        }
      },
      "Event": {
        "type": "object",
        "description": "A schema-v1 event; in the log's JSON forms it also carries its seq.",
        "required": [
          "v",
          "type",
          "ts",
          "data"
        ],
        "properties": {
          "seq": {
            "type": "integer",
            "format": "int64"
          },
          "v": {
            "const": 1
          },
          "type": {
            "type": "string"
          },
          "ts": {
            "type": "string"
          },
          "profile": {
            "type": "string"
          },
          "backend": {
            "type": "string"
          },
          "session": {
            "type": "string"
          },
          "turn": {
            "type": "string"
          },
          "part": {
            "type": "string"
          },
          "cursor": {
            "type": "string"
          },
          "data": {
            "type": "object"
          }
        }
      },
      "EventBatch": {
        "type": "object",
        "required": [
          "events",
          "next"
        ],
        "properties": {
          "events": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Event"
            }
          },
          "next": {
            "type": "integer",
            "format": "int64"
          }
        }
      },
      "Session": {
        "type": "object",
        "required": [
          "id"
        ],
        "properties": {
          "id": {
            "type": "string"
          },
          "title": {
            "type": "string"
          },
          "directory": {
            "type": "string"
          }
        }
      },
      "TurnReceipt": {
        "type": "object",
        "required": [
          "session",
          "turn"
        ],
        "properties": {
          "session": {
            "type": "string"
          },
          "turn": {
            "type": [
              "string",
              "null"
            ]
          }
        }
      }
    }
  }
}
"""#
}
