# Generates Sources/SluiceAPI/openapi.json (the API contract; OpenAPIContractTests checks it against the router
# and scripts/test-api-schema runs schemathesis over it):  python3 scripts/openapi/generate.py > Sources/SluiceAPI/openapi.json
import json, collections
O = collections.OrderedDict

ID = "^[A-Za-z0-9_-]{1,128}$"
TEXT_ID = "^[A-Za-z0-9_.:-]{1,128}$"
# Unicode White_Space, as the filter counts "blank": a message needs one character outside it.
WS = "\t\n\u000b\f\r \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
# A text that is stored may not hold a NUL (a store would cut it short): the API answers 400.
NO_NUL = "^[^\\u0000]*$"
NOT_BLANK = "[^" + WS.replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r").replace("\f", "\\f") + "]"

def ref(name): return {"$ref": f"#/components/schemas/{name}"}
def resp(name): return {"$ref": f"#/components/responses/{name}"}
def json_body(schema, desc=None):
    r = {"content": {"application/json": {"schema": schema}}}
    if desc: r["description"] = desc
    return r
SEC = [{"appToken": []}, {"bearer": []}]
USER_HEADER = {"$ref": "#/components/parameters/UserId"}
def path_param(name, pattern, desc):
    return {"name": name, "in": "path", "required": True, "description": desc, "schema": {"type": "string", "pattern": pattern}}
ERR = lambda *codes: {str(c): resp(f"Error{c}") for c in codes}

def op(opid, summary, params=None, body=None, ok=None, errors=(), security=SEC, extra=None, description=None):
    o = O()
    o["operationId"] = opid
    o["summary"] = summary
    if description: o["description"] = description
    if security is not None: o["security"] = security
    if params: o["parameters"] = params
    if body: o["requestBody"] = body
    o["responses"] = O(ok or {})
    o["responses"].update(ERR(*errors))
    if extra: o["responses"].update(extra)
    return o

paths = O()
paths["/healthz"] = {"get": op("health", "The store's and each provider's state (no credential).", security=[],
    ok={"200": dict(description="Serving (status ok or degraded).", **json_body(ref("Health"))),
        "503": dict(description="The store is unreachable.", **json_body(ref("Health")))}, errors=(405,))}
paths["/metrics"] = {"get": op("metrics", "Prometheus text: items by kind and status, stage latencies, provider calls, HTTP requests (app tokens).",
    ok={"200": {"description": "Prometheus exposition format 0.0.4.", "content": {"text/plain": {"schema": {"type": "string"}}}}},
    errors=(400, 401, 403, 405))}

text_id = path_param("id", TEXT_ID, "A text item's id.")
user_in_path = lambda name="id": path_param(name, ID, "The user's id.")
image_id = path_param("imageId", ID, "The image's id.")
paths["/v1/items/{id}"] = {
    "get": op("textItem", "A text item's status.", [text_id, USER_HEADER], ok={"200": dict(description="The item.", **json_body(ref("Item")))},
              errors=(400, 401, 404, 405)),
    "delete": op("eraseText", "Erase a text item (app token); a tombstone stays.", [text_id, USER_HEADER],
                 ok={"200": dict(description="What was erased.", **json_body(ref("Erased")))}, errors=(400, 401, 403, 404, 405)),
}
paths["/v1/items/{id}/{imageId}"] = {
    "get": op("imageItem", "An image item's status (`id` is the user id). Other users see approved images only.",
              [user_in_path(), image_id, USER_HEADER], ok={"200": dict(description="The item.", **json_body(ref("Item")))},
              errors=(400, 401, 404, 405)),
    "delete": op("eraseImage", "Erase an image: every file (approved, thumbnail, quarantine, review, pending) and its row; a tombstone stays (app token).",
                 [user_in_path(), image_id, USER_HEADER], ok={"200": dict(description="What was erased.", **json_body(ref("Erased")))},
                 errors=(400, 401, 403, 404, 405)),
}
paths["/v1/items/{id}/{imageId}/events"] = {"get": op("imageItemEvents",
    "Live status as Server-Sent Events: `event: status` with the item now and at each change; ends at approved, blocked or rejected, or after api.events.timeoutSeconds.",
    [user_in_path(), image_id, USER_HEADER],
    ok={"200": {"description": "text/event-stream: each event is `status` with the item as JSON.", "content": {"text/event-stream": {"schema": {
        "type": "object", "required": ["event", "data"], "properties": {"event": {"const": "status"},
        "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": ref("Item")}}}}}}},
    errors=(400, 401, 404, 405))}
paths["/v1/items/{id}/{imageId}/appeal"] = {"post": op("appealImage",
    "The owner asks for a blocked image to be looked at again: it returns to review, marked as an appeal with the message.",
    [user_in_path(), image_id, USER_HEADER],
    {"required": True, "content": {"application/json": {"schema": {"type": "object", "required": ["message"], "properties": {
        "message": {"type": "string", "minLength": 1, "maxLength": 1000, "allOf": [{"pattern": NOT_BLANK}, {"pattern": NO_NUL}]}}}}}},
    ok={"202": dict(description="Back in review.", **json_body(ref("Item")))}, errors=(400, 401, 403, 404, 405, 409))}
paths["/v1/appeals"] = {"post": op("appealItem",
    "The owner asks for a blocked item, text or image, to be looked at again: it returns to review, marked as an appeal with the message.",
    [USER_HEADER],
    {"required": True, "content": {"application/json": {"schema": {"type": "object", "required": ["item", "message"], "properties": {
        "item": {"type": "string", "pattern": "^([A-Za-z0-9_.:-]{1,128}|[A-Za-z0-9_-]{1,128}/[A-Za-z0-9_-]{1,128})$",
                 "description": "The item's id as its JSON gives it: a text item's id, or {userId}/{imageId}."},
        "message": {"type": "string", "minLength": 1, "maxLength": 1000, "allOf": [{"pattern": NOT_BLANK}, {"pattern": NO_NUL}]}}}}}},
    ok={"202": dict(description="Back in review.", **json_body(ref("Item")))}, errors=(400, 401, 403, 404, 405, 409))}
paths["/v1/reports"] = {"get": op("reports", "Reports, newest first, optionally one status (app token).",
    [{"name": "status", "in": "query", "required": False, "schema": {"type": "string", "enum": ["open", "resolved", "dismissed"]}}, USER_HEADER],
    ok={"200": dict(description="The reports.", **json_body({"type": "object", "required": ["reports"], "properties": {
        "reports": {"type": "array", "items": ref("Report")}}}))}, errors=(400, 401, 403, 405))}
paths["/v1/reports/{reportId}/resolve"] = {"post": op("resolveReport", "Resolve or dismiss an open report (app token).",
    [path_param("reportId", "^[A-Za-z0-9_]{1,64}$", "The report's id."), USER_HEADER],
    {"required": True, "content": {"application/json": {"schema": {"type": "object", "required": ["status"], "properties": {
        "status": {"type": "string", "enum": ["resolved", "dismissed"]}, "note": {"type": ["string", "null"], "maxLength": 1000, "pattern": NO_NUL}}}}}},
    ok={"200": dict(description="The report as resolved.", **json_body(ref("Report")))}, errors=(400, 401, 403, 404, 405))}
paths["/v1/banks"] = {"get": op("banks", "PDQ hash banks with their action, threshold and size (app token).", [USER_HEADER],
    ok={"200": dict(description="The banks.", **json_body({"type": "object", "required": ["banks"], "properties": {
        "banks": {"type": "array", "items": ref("Bank")}}}))}, errors=(400, 401, 403, 405))}
paths["/v1/banks/{name}/hashes"] = {"post": op("addBankHashes", "Add PDQ hashes to a bank made with `sluice banks add` (app token).",
    [path_param("name", "^[a-z0-9_-]{1,64}$", "The bank's name."), USER_HEADER],
    {"required": True, "content": {"application/json": {"schema": {"type": "object", "required": ["hashes"], "properties": {
        "hashes": {"type": "array", "minItems": 1, "maxItems": 100000, "items": {"type": "string", "pattern": "^[0-9a-fA-F]{64}$"}},
        "note": {"type": ["string", "null"], "maxLength": 1000, "pattern": NO_NUL}}}}}},
    ok={"200": dict(description="How many were new.", **json_body({"type": "object", "required": ["bank", "added", "existing"], "properties": {
        "bank": {"type": "string"}, "added": {"type": "integer", "minimum": 0}, "existing": {"type": "integer", "minimum": 0}}}))},
    errors=(400, 401, 403, 404, 405, 413))}
other_id = path_param("otherId", ID, "The other user's id.")
user_id = path_param("userId", ID, "The user's id.")
PAIR_STATE = json_body({"type": "object", "required": ["userId", "otherId"], "properties": {
    "userId": {"type": "string"}, "otherId": {"type": "string"}, "blocked": {"type": "boolean"}, "following": {"type": "boolean"},
    "changed": {"type": "boolean"}}})
paths["/v1/users/{userId}/blocks/{otherId}"] = {
    "get": op("blockState", "Whether userId blocks otherId (app token).", [user_id, other_id, USER_HEADER],
              ok={"200": dict(description="The block state.", **PAIR_STATE)}, errors=(400, 401, 403, 405)),
    "put": op("block", "userId blocks otherId (app token); 409 when they are the same user.", [user_id, other_id, USER_HEADER],
              ok={"200": dict(description="Blocked.", **PAIR_STATE)}, errors=(400, 401, 403, 405, 409)),
    "delete": op("unblock", "userId unblocks otherId (app token); 409 when they are the same user.", [user_id, other_id, USER_HEADER],
                 ok={"200": dict(description="Unblocked.", **PAIR_STATE)}, errors=(400, 401, 403, 405, 409)),
}
paths["/v1/users/{userId}/follows/{otherId}"] = {
    "put": op("followREST", "userId follows otherId (app token); 409 when they are the same user.", [user_id, other_id, USER_HEADER],
              ok={"200": dict(description="Following.", **PAIR_STATE)}, errors=(400, 401, 403, 405, 409)),
    "delete": op("unfollowREST", "userId stops following otherId (app token); 409 when they are the same user.", [user_id, other_id, USER_HEADER],
                 ok={"200": dict(description="Not following.", **PAIR_STATE)}, errors=(400, 401, 403, 405, 409)),
}
paths["/v1/users/{userId}/profile"] = {"put": op("profile", "What the rules know of a user: message privacy, account creation, trusted reporter (app token). Absent or null fields stay as they were; an unknown field is refused (400).",
    [user_id, USER_HEADER], {"required": True, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": False, "properties": {
        "messagePrivacy": {"type": ["string", "null"], "enum": ["anyone", "followers", None]},
        "createdAt": {"type": ["number", "null"], "minimum": 0, "maximum": 4102444800, "description": "When the account was made, Unix seconds."},
        "trusted": {"type": ["boolean", "null"]}}}}}},
    ok={"200": dict(description="The profile.", **json_body({"type": "object", "required": ["userId", "messagePrivacy", "trusted"], "properties": {
        "userId": {"type": "string"}, "messagePrivacy": {"type": "string", "enum": ["anyone", "followers"]},
        "createdAt": {"type": "string", "format": "date-time"}, "trusted": {"type": "boolean"}}}))}, errors=(400, 401, 403, 405))}
paths["/v1/users/{userId}/can-message/{otherId}"] = {"get": op("canMessageREST", "Seed 003's rules for a message from userId to otherId (app token).",
    [user_id, other_id, USER_HEADER], ok={"200": dict(description="The permission.", **json_body(ref("MessagingPermission")))},
    errors=(400, 401, 403, 405))}
paths["/v1/users/{userId}"] = {"delete": op("eraseUser", "Erase a user's files and items; their reports lose their name (app token).",
    [path_param("userId", ID, "The user's id."), USER_HEADER], ok={"200": dict(description="What was erased.", **json_body(ref("Erased")))},
    errors=(400, 401, 403, 405))}
paths["/v1/images/{folder}/{userId}/{file}"] = {"get": op("image", "An approved image or its thumbnail (never pending, review, quarantined or rejected).",
    [{"name": "folder", "in": "path", "required": True, "schema": {"type": "string", "enum": ["approved", "thumbnails"]}},
     path_param("userId", ID, "The user's id."),
     {"name": "file", "in": "path", "required": True, "description": "`{imageId}.jpg`", "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,128}\\.jpg$"}},
     {"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string"}}, USER_HEADER],
    ok={"200": {"description": "The JPEG.", "headers": {"ETag": {"schema": {"type": "string"}}}, "content": {"image/jpeg": {"schema": {"type": "string", "format": "binary"}}}},
        "304": {"description": "Not modified (If-None-Match)."}},
    errors=(400, 401, 404, 405))}

IMAGE_TYPES = ["image/jpeg", "image/png", "image/webp", "image/gif"]
upload_body = {"required": True, "description": "The image (at most limits.maxBytes; checked by its magic bytes).",
               "content": {t: {"schema": {"type": "string", "format": "sluice-image"}} for t in IMAGE_TYPES}}
UPLOAD_LINKS = {
    "ItemStatus": {"operationId": "imageItem", "parameters": {"id": "$response.body#/userId", "imageId": "$response.body#/imageId"}},
    "LiveStatus": {"operationId": "imageItemEvents", "parameters": {"id": "$response.body#/userId", "imageId": "$response.body#/imageId"}},
    "Erase": {"operationId": "eraseImage", "parameters": {"id": "$response.body#/userId", "imageId": "$response.body#/imageId"}},
}
paths["/v1/uploads/{userId}"] = {"post": op("upload", "Upload an image into pending/ for the daemon; Sluice picks the image id.",
    [path_param("userId", ID, "The uploading user (users upload for themselves)."), USER_HEADER], upload_body,
    ok={"201": dict(description="Pending.", links=UPLOAD_LINKS, **json_body(ref("UploadResult")))}, errors=(400, 401, 403, 404, 405, 413, 429))}
paths["/v1/uploads/{userId}/{imageId}"] = {"put": op("uploadWithId", "Upload an image under the client's id (the seed's pending/{userId}/{imageId}).",
    [path_param("userId", ID, "The uploading user (users upload for themselves)."), image_id, USER_HEADER], upload_body,
    ok={"201": dict(description="Pending.", **json_body(ref("UploadResult"))),
        "200": dict(description="The same bytes were already pending under this id.", **json_body(ref("UploadResult")))},
    errors=(400, 401, 403, 404, 405, 409, 413, 429))}

def callable_body(data_schema, nullable=False):
    data = data_schema if not nullable else {"anyOf": [data_schema, {"type": "null"}]}
    req = ["data"] if not nullable else []
    return {"required": True, "content": {"application/json": {"schema": {"type": "object", "required": req, "properties": {"data": data}}}}}
def callable_ok(result):
    return {"200": dict(description="`{result: …}`", **json_body({"type": "object", "required": ["result"], "properties": {"result": result}}))}
nullable_string = {"type": ["string", "null"]}
functions = O()
functions["validate_text"] = ("validateText", "Seed 000's validate_text: `{allowed, reason}` from the text filter.",
    callable_body({"type": "object", "required": ["text"], "properties": {
        "text": {"type": "string", "minLength": 1, "maxLength": 10000, "pattern": NOT_BLANK, "description": "At most text.maxLength characters (default 10,000)."},
        "context": nullable_string}}),
    callable_ok(ref("ValidateTextResult")), (400, 401, 404, 405, 429))
functions["detectPriority"] = ("detectPriority", "Seed 004's detectPriority: how urgent a message is.",
    callable_body({"type": "object", "required": ["messageText"], "properties": {
        "messageText": {"type": "string", "minLength": 1}, "conversationContext": nullable_string}}),
    callable_ok(ref("Priority")), (400, 401, 404, 405, 429))
functions["submit_report"] = ("submitReport", "Seed 000's submit_report.",
    callable_body({"type": "object", "required": ["messageId", "category"], "properties": {
        "messageId": {"type": "string", "minLength": 1, "maxLength": 256, "pattern": NO_NUL},
        "category": {"type": "string", "enum": ["spam", "harassment", "inappropriate", "other"]},
        "description": {"type": ["string", "null"], "maxLength": 1000, "pattern": NO_NUL}}}),
    callable_ok(ref("ReportResult")), (400, 401, 404, 405, 429))
functions["get_rate_limits"] = ("getRateLimits", "Seed 000's get_rate_limits for the calling user (called with `call(nil)`: data may be null or absent).",
    {"required": False, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": False, "properties": {"data": {"type": ["object", "null"], "maxProperties": 0}}}}}},
    callable_ok(ref("RateLimits")), (400, 401, 404, 405))
functions["healthCheck"] = ("healthCheck", "Seed 004's healthCheck.",
    {"required": False, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": False, "properties": {"data": {"type": ["object", "null"], "maxProperties": 0}}}}}},
    callable_ok(ref("HealthCheck")), (400, 401, 404, 405))
functions["deleteProfilePicture"] = ("deleteProfilePicture", "Seed 004's deleteProfilePicture: erases `{userId}/profile_{userId}` with every file of it.",
    callable_body({"type": "object", "required": ["userId"], "properties": {"userId": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,120}$"}}}),
    callable_ok({"type": "object", "required": ["success", "deleted"], "properties": {"success": {"type": "boolean"}, "deleted": {"type": "boolean"}}}),
    (400, 401, 403, 404, 405))

functions["reportUser"] = ("reportUser", "Seed 004's reportUser: a report on a user, for review.",
    callable_body({"type": "object", "required": ["reporterID", "reportedID", "reason"], "properties": {
        "reporterID": {"type": "string", "pattern": ID}, "reportedID": {"type": "string", "pattern": ID},
        "reason": {"type": "string", "minLength": 1, "maxLength": 1000, "pattern": NO_NUL}}}),
    callable_ok(ref("ReportResult")), (400, 401, 403, 404, 405, 429))

PAIR = callable_body({"type": "object", "properties": {
    "userId": {"type": ["string", "null"], "pattern": ID, "description": "The other user (the caller acts)."},
    "blockerID": {"type": ["string", "null"], "pattern": ID, "description": "Seed 004: who acts (must be the signed-in user)."},
    "blockedID": {"type": ["string", "null"], "pattern": ID, "description": "Seed 004: the other user."},
    "conversationID": {"type": ["string", "null"], "pattern": ID}},
    "description": "null is the same as absent; userId or blockedID names the other user.",
    "anyOf": [{"required": ["userId"], "properties": {"userId": {"type": "string"}}},
              {"required": ["blockedID"], "properties": {"blockedID": {"type": "string"}}}]})
DONE = callable_ok({"type": "object", "required": ["success", "changed"], "properties": {"success": {"const": True}, "changed": {"type": "boolean"}}})
functions["blockUser"] = ("blockUser", "Seed 004's blockUser: messages from the blocked user are stopped (with the auto-reply). 409 for oneself.", PAIR, DONE, (400, 401, 403, 404, 405, 409))
functions["unblockUser"] = ("unblockUser", "Seed 004's unblockUser. 409 for oneself.", PAIR, DONE, (400, 401, 403, 404, 405, 409))
functions["isBlocked"] = ("isBlocked", "Seed 004's isBlocked: a Bool.", PAIR, callable_ok({"type": "boolean"}), (400, 401, 403, 404, 405))
functions["follow"] = ("follow", "Follow a user (seed 003). 409 for oneself.", PAIR, DONE, (400, 401, 403, 404, 405, 409))
functions["unfollow"] = ("unfollow", "Stop following a user (seed 003). 409 for oneself.", PAIR, DONE, (400, 401, 403, 404, 405, 409))
functions["setMessagePrivacy"] = ("setMessagePrivacy", "Seed 003's messagePrivacy for the caller.",
    callable_body({"type": "object", "required": ["messagePrivacy"], "properties": {"messagePrivacy": {"type": "string", "enum": ["anyone", "followers"]}}}),
    DONE, (400, 401, 404, 405))
functions["canMessage"] = ("canMessage", "Seed 003's rules: may the caller message this user now?",
    callable_body({"type": "object", "required": ["recipientId"], "properties": {"recipientId": {"type": "string", "pattern": ID}}}),
    callable_ok(ref("MessagingPermission")), (400, 401, 404, 405))

THREAD_ARGS = callable_body({"type": "object", "required": ["conversationId"], "properties": {
    "conversationId": {"type": "string", "pattern": ID, "description": "The conversation (the caller must belong to it)."},
    "messageLimit": {"type": ["integer", "null"], "minimum": 1, "maximum": 500, "description": "Newest messages read (default 100; at most threads.maxMessageLimit, 500 by default)."}}})
THREAD_ERRORS = (400, 401, 404, 405, 409, 429, 500)
functions["summarizeThread"] = ("summarizeThread", "Seed 004's summarizeThread: bullet points of the conversation's approved messages through the thread LLM (409 FAILED_PRECONDITION when none is configured, 500 INTERNAL when it fails).",
    THREAD_ARGS, callable_ok(ref("ThreadSummary")), THREAD_ERRORS)
functions["extractActionItems"] = ("extractActionItems", "Seed 004's extractActionItems: open tasks, each tied to a message of the thread.",
    THREAD_ARGS, callable_ok(ref("ActionItems")), THREAD_ERRORS)
functions["trackDecisions"] = ("trackDecisions", "Seed 004's trackDecisions: decisions, each tied to messages of the thread.",
    THREAD_ARGS, callable_ok(ref("Decisions")), THREAD_ERRORS)
functions["smartSearch"] = ("smartSearch", "Seed 004's smartSearch: keyword and semantic (vector) search fused by rank, offline; without conversationId over every conversation of the user.",
    callable_body({"type": "object", "required": ["query"], "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 500, "pattern": NOT_BLANK},
        "conversationId": {"type": ["string", "null"], "pattern": ID, "description": "Without it: every conversation of the user (401 when no user is named)."},
        "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 50, "description": "Results (default 10)."},
        "messageLimit": {"type": ["integer", "null"], "minimum": 1, "maximum": 500, "description": "Newest messages searched per conversation (default 200)."}}}),
    callable_ok(ref("SmartSearch")), (400, 401, 404, 405, 429, 500))

PROJECT = {"name": "projectId", "in": "path", "required": True, "description": "The Firebase project id.",
           "schema": {"type": "string", "pattern": "^[a-z][a-z0-9-]{4,28}[a-z0-9]$"}}
REGION = {"name": "region", "in": "path", "required": True, "description": "The functions region, e.g. us-central1.",
          "schema": {"type": "string", "pattern": "^[a-z]+(-[a-z]+)+[0-9]+$"}}
for name, (opid, summary, body, ok, errors) in functions.items():
    paths[f"/v1/functions/{name}"] = {"post": op(opid, summary, [USER_HEADER], body, ok, errors)}
for name, (opid, summary, body, ok, errors) in functions.items():
    paths[f"/{{projectId}}/{{region}}/{name}"] = {"post": op(opid + "Firebase", summary + " (Firebase SDK URL shape)", [PROJECT, REGION, USER_HEADER], body, ok, errors)}

caption_ok = {"200": {"description": "The seed's success envelope.", "headers": {
        "X-Request-Id": {"schema": {"type": "string"}}, "X-RateLimit-Limit": {"schema": {"type": "integer"}},
        "X-RateLimit-Remaining": {"schema": {"type": "integer"}}, "X-RateLimit-Reset": {"schema": {"type": "integer"}}},
    "content": {"application/json": {"schema": ref("CaptionSuccess")}}}}
for code in (400, 401, 405, 429, 500):
    caption_ok[str(code)] = resp("CaptionError")
paths["/api/generateCaption"] = {"post": op("generateCaption", "Seed 002's Caption Generation API (X-App-Token; 60 per minute per client address by default).",
    None, {"required": True, "content": {"application/json": {"schema": {"type": "object", "required": ["imageData", "mimeType"], "properties": {
        "imageData": {"type": "string", "format": "sluice-image-base64", "minLength": 1, "maxLength": 5242880, "description": "Base64 image, at most 5 MB after encoding."},
        "mimeType": {"type": "string", "enum": ["image/jpeg", "image/png", "image/webp", "image/heic"], "description": "Must match the image's bytes."}}}}}},
    caption_ok, security=[{"appToken": []}])}

schemas = O()
schemas["Error"] = {"type": "object", "required": ["error"], "properties": {"error": {"type": "object", "required": ["status", "message"], "properties": {
    "status": {"type": "string", "enum": ["UNAUTHENTICATED", "PERMISSION_DENIED", "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "NOT_FOUND", "ALREADY_EXISTS", "FAILED_PRECONDITION", "INTERNAL"]},
    "message": {"type": "string"}}}}}
schemas["CaptionError"] = {"type": "object", "required": ["success", "error"], "properties": {"success": {"const": False}, "error": {"type": "object",
    "required": ["code", "message", "timestamp"], "properties": {"code": {"type": "string", "enum": ["AUTH_001", "VAL_001", "AI_001", "METHOD_001", "RATE_001"]},
    "message": {"type": "string"}, "timestamp": {"type": "string", "format": "date-time"}}}}}
schemas["CaptionSuccess"] = {"type": "object", "required": ["success", "data", "metadata"], "properties": {
    "success": {"const": True},
    "data": {"type": "object", "required": ["caption", "provider", "model", "confidence", "usage", "processingTime", "requestId"], "properties": {
        "caption": {"type": "string"}, "provider": {"type": "string"}, "model": {"type": "string"},
        "confidence": {"type": "string", "enum": ["high", "medium", "low", "unknown"]},
        "usage": {"anyOf": [{"type": "null"}, {"type": "object", "required": ["prompt_tokens", "completion_tokens", "total_tokens"], "properties": {
            "prompt_tokens": {"type": "integer"}, "completion_tokens": {"type": "integer"}, "total_tokens": {"type": "integer"}}}]},
        "processingTime": {"type": "string", "pattern": "^[0-9]+ms$"}, "requestId": {"type": "string"}}},
    "metadata": {"type": "object", "required": ["timestamp", "provider", "requestId", "processingTime", "imageSize", "mimeType"], "properties": {
        "timestamp": {"type": "string", "format": "date-time"}, "provider": {"type": "string"}, "requestId": {"type": "string"},
        "processingTime": {"type": "integer"}, "imageSize": {"type": "integer"}, "mimeType": {"type": "string"}}}}}
schemas["Health"] = {"type": "object", "required": ["status", "store", "providers"], "properties": {
    "status": {"type": "string", "enum": ["ok", "degraded", "unavailable"]}, "store": {"type": "string", "enum": ["reachable", "unreachable"]},
    "providers": {"type": "array", "items": {"type": "object", "required": ["role", "name", "endpoint", "reachable", "checkedAt", "circuit"], "properties": {
        "role": {"type": "string", "enum": ["vision", "caption", "priority"]}, "name": {"type": "string"}, "endpoint": {"type": "string"},
        "reachable": {"type": "boolean"}, "problem": {"type": "string"}, "checkedAt": {"type": "string", "format": "date-time"},
        "circuit": {"type": "object", "description": "process → closed | half-open | open", "additionalProperties": {"type": "string", "enum": ["closed", "half-open", "open"]}}}}}}}
schemas["HealthCheck"] = {"type": "object", "required": ["status", "message", "timestamp"], "properties": {
    "status": {"type": "string", "enum": ["healthy", "unhealthy"]}, "message": {"type": "string"}, "timestamp": {"type": "string", "format": "date-time"}}}
THREAD_META = {"conversationId": {"type": "string"}, "messageCount": {"type": "integer", "minimum": 0},
    "generatedAt": {"type": "string", "format": "date-time"}, "provider": {"type": "string"}, "model": {"type": "string"},
    "cached": {"type": "boolean", "description": "Answered from the store's cache (same messages, provider and model)."}}
schemas["ThreadSummary"] = {"type": "object", "required": ["summary", "keyPoints", "participants", "messageCount", "conversationId", "generatedAt", "provider", "model", "cached"], "properties": dict(THREAD_META, **{
    "summary": {"type": "array", "items": {"type": "string"}, "description": "Bullet points (seed 004)."},
    "keyPoints": {"type": "array", "items": {"type": "string"}},
    "participants": {"type": "array", "items": {"type": "string"}, "description": "Senders, in order of their first message."},
    "timeSpan": {"type": ["object", "null"], "required": ["start", "end"], "properties": {"start": {"type": "string", "format": "date-time"}, "end": {"type": "string", "format": "date-time"}}}})}
schemas["ActionItem"] = {"type": "object", "required": ["id", "task", "assignee", "deadline", "priority", "status", "sourceMessageId", "sourceMessage"], "properties": {
    "id": {"type": "string"}, "task": {"type": "string"}, "assignee": {"type": ["string", "null"]},
    "deadline": {"type": ["string", "null"], "description": "ISO date, ISO date-time or ASAP."},
    "priority": {"type": "string", "enum": ["high", "medium", "low"]}, "status": {"type": "string", "enum": ["open", "in-progress"]},
    "sourceMessageId": {"type": "integer", "description": "The message's number (smartSearch's messageId)."}, "sourceMessage": {"type": "string", "description": "The message's id."}}}
schemas["ActionItems"] = {"type": "object", "required": ["items", "actionItems", "totalCount", "conversationId", "messageCount", "generatedAt", "provider", "model", "cached"], "properties": dict(THREAD_META, **{
    "items": {"type": "array", "items": ref("ActionItem")}, "actionItems": {"type": "array", "items": ref("ActionItem"), "description": "The same list (seed 004: for compatibility)."},
    "totalCount": {"type": "integer", "minimum": 0}})}
schemas["Decision"] = {"type": "object", "required": ["id", "decision", "topic", "participantsInvolved", "confidence", "context", "sourceMessageIds", "sourceMessages"], "properties": {
    "id": {"type": "string"}, "decision": {"type": "string"}, "topic": {"type": "string"},
    "participantsInvolved": {"type": "array", "items": {"type": "string"}}, "confidence": {"type": "string", "enum": ["high", "medium", "low"]},
    "timestamp": {"type": ["string", "null"], "format": "date-time"}, "context": {"type": "string"},
    "sourceMessageIds": {"type": "array", "items": {"type": "integer"}}, "sourceMessages": {"type": "array", "items": {"type": "string"}}}}
schemas["Decisions"] = {"type": "object", "required": ["decisions", "totalCount", "conversationId", "messageCount", "generatedAt", "provider", "model", "cached"], "properties": dict(THREAD_META, **{
    "decisions": {"type": "array", "items": ref("Decision")}, "totalCount": {"type": "integer", "minimum": 0}})}
schemas["SearchResult"] = {"type": "object", "required": ["snippet", "messageId", "id", "conversationId", "relevanceScore", "sender", "sentAt", "matchedBy"], "properties": {
    "snippet": {"type": "string"}, "messageId": {"type": "integer"}, "id": {"type": "string"}, "conversationId": {"type": "string"},
    "relevanceScore": {"type": "number", "minimum": 0, "maximum": 1}, "context": {"type": ["string", "null"]}, "sender": {"type": "string"},
    "sentAt": {"type": "string", "format": "date-time"}, "matchedBy": {"type": "array", "items": {"type": "string", "enum": ["keyword", "semantic"]}}}}
schemas["SmartSearch"] = {"type": "object", "required": ["results", "totalResults", "mode", "generatedAt"], "properties": {
    "results": {"type": "array", "items": ref("SearchResult")}, "totalResults": {"type": "integer", "minimum": 0},
    "mode": {"type": "string", "enum": ["hybrid", "keyword"]}, "note": {"type": ["string", "null"]},
    "generatedAt": {"type": "string", "format": "date-time"}}}
schemas["Priority"] = {"type": "object", "required": ["urgencyScore", "priority", "isUrgent", "reason", "urgencyIndicators"], "properties": {
    "urgencyScore": {"type": "integer", "minimum": 0, "maximum": 100}, "priority": {"type": "string", "enum": ["high", "medium", "low"]},
    "isUrgent": {"type": "boolean"}, "reason": {"type": "string"}, "urgencyIndicators": {"type": "array", "items": {"type": "string"}},
    "engine": {"type": "string"}, "fallbackReason": {"type": "string"},
    "confidence": {"type": "string", "enum": ["high", "medium", "low"], "description": "Seed 004's optional field: the score's distance from its band's edges."},
    "timeframe": {"type": "string", "enum": ["immediate", "today", "soon", "none"]},
    "category": {"type": "string", "enum": ["emergency", "safety", "health", "work", "family", "logistics", "finance", "social", "info"]},
    "recommendedAction": {"type": "string"}}}
schemas["TextVerdict"] = {"type": "object", "required": ["allowed", "reason", "matches", "censored"], "properties": {
    "allowed": {"type": "boolean"}, "reason": {"type": ["string", "null"]}, "censored": {"type": "string"},
    "matches": {"type": "array", "items": {"type": "object", "required": ["term", "category", "severity", "start", "end"], "properties": {
        "term": {"type": "string"}, "category": {"type": "string"}, "severity": {"type": "string", "enum": ["mild", "strong", "severe", "slur"]},
        "start": {"type": "integer", "minimum": 0}, "end": {"type": "integer", "minimum": 0}}}},
    "classifier": {"type": "object", "required": ["provider", "scores", "categories"],
        "description": "The text classifier's second opinion (text.classifier), when one judged the message.", "properties": {
        "provider": {"type": "string"},
        "scores": {"type": "object", "description": "0–1 per Sluice category", "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1}},
        "action": {"type": "string", "enum": ["mark", "review", "block"]},
        "categories": {"type": "array", "items": {"type": "string", "enum": ["harassment", "threat", "hate", "selfHarm", "sexual", "sexualMinors", "violence", "illicit"]}},
        "reason": {"type": "string"}}}}}
schemas["Item"] = {"type": "object", "required": ["id", "kind", "userId", "status", "imageStatus", "createdAt", "updatedAt"], "properties": {
    "id": {"type": "string"}, "kind": {"type": "string", "enum": ["image", "text"]}, "userId": {"type": "string"},
    "status": {"type": "string", "enum": ["pending", "approved", "review", "blocked", "rejected"]},
    "imageStatus": {"type": "string", "enum": ["approved", "pending", "blocked"], "description": "approved; pending (pending and review); blocked (blocked and rejected)."},
    "reason": {"type": "string"}, "caption": {"type": "string"}, "priority": ref("Priority"), "text": ref("TextVerdict"),
    "autoReply": {"type": "string", "description": "Text messages: what the conversation rules tell the sender (seed 004: \"This user has blocked you\")."},
    "pdq": {"type": "object", "required": ["hash", "quality"], "description": "Images: the PDQ perceptual hash of the decoded image.", "properties": {
        "hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"}, "quality": {"type": "integer", "minimum": 0, "maximum": 100}}},
    "match": {"type": "object", "required": ["bank", "distance", "hash", "action", "acted"], "description": "Images: the hash bank the image matched.", "properties": {
        "bank": {"type": "string"}, "distance": {"type": "integer", "minimum": 0, "maximum": 256}, "hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "action": {"type": "string", "enum": ["block", "review", "allow"]}, "acted": {"type": "boolean"}}},
    "createdAt": {"type": "string", "format": "date-time"}, "updatedAt": {"type": "string", "format": "date-time"}}}
schemas["Bank"] = {"type": "object", "required": ["name", "action", "threshold", "enabled", "size"], "properties": {
    "name": {"type": "string"}, "action": {"type": "string", "enum": ["block", "review", "allow"]}, "threshold": {"type": "integer", "minimum": 0},
    "enabled": {"type": "boolean"}, "size": {"type": "integer", "minimum": 0}}}
schemas["Erased"] = {"type": "object", "required": ["erased", "files"], "properties": {"erased": {"type": "array", "items": {"type": "string"}}, "files": {"type": "integer", "minimum": 0}}}
schemas["UploadResult"] = {"type": "object", "required": ["id", "userId", "imageId", "status", "imageStatus"], "properties": {
    "id": {"type": "string"}, "userId": {"type": "string"}, "imageId": {"type": "string"}, "status": {"const": "pending"}, "imageStatus": {"const": "pending"}}}
schemas["MessagingPermission"] = {"type": "object", "required": ["allowed", "reason", "requestsRemaining"], "properties": {
    "allowed": {"type": "boolean"}, "reason": {"type": "string"},
    "requestsRemaining": {"type": ["integer", "null"], "minimum": 0, "description": "null when messaging is not limited"}}}
schemas["Report"] = {"type": "object", "required": ["reportId", "messageId", "category", "createdAt", "status", "target"], "properties": {
    "reportId": {"type": "string"}, "messageId": {"type": "string"}, "category": {"type": "string"}, "description": {"type": ["string", "null"]},
    "reporterUserId": {"type": ["string", "null"]}, "createdAt": {"type": "string", "format": "date-time"},
    "status": {"type": "string", "enum": ["open", "resolved", "dismissed"]}, "resolvedBy": {"type": ["string", "null"]},
    "resolvedAt": {"type": ["string", "null"], "format": "date-time"}, "resolutionNote": {"type": ["string", "null"]},
    "target": {"type": "string", "enum": ["item", "user"]}}}
schemas["ValidateTextResult"] = {"type": "object", "required": ["allowed", "reason"], "properties": {"allowed": {"type": "boolean"}, "reason": {"type": ["string", "null"]}}}
schemas["ReportResult"] = {"type": "object", "required": ["success", "reportId"], "properties": {"success": {"const": True}, "reportId": {"type": "string"}}}
schemas["RateLimit"] = {"type": "object", "required": ["current", "limit", "remaining", "resetAt", "windowSeconds"], "properties": {
    "current": {"type": "integer", "minimum": 0}, "limit": {"type": "integer", "minimum": 1}, "remaining": {"type": "integer", "minimum": 0},
    "resetAt": {"type": "string", "format": "date-time"}, "windowSeconds": {"type": "integer", "minimum": 1}}}
schemas["RateLimits"] = {"type": "object", "required": ["image_upload", "text_message", "report", "detect_priority", "threads"], "properties": {
    k: ref("RateLimit") for k in ["image_upload", "text_message", "report", "detect_priority", "threads"]}}

def err(desc, headers=None):
    r = {"description": desc, "content": {"application/json": {"schema": ref("Error")}}}
    if headers: r["headers"] = headers
    return r
responses = O()
responses["Error400"] = err("INVALID_ARGUMENT")
responses["Error401"] = err("UNAUTHENTICATED")
responses["Error403"] = err("PERMISSION_DENIED")
responses["Error404"] = err("NOT_FOUND")
responses["Error405"] = err("INVALID_ARGUMENT: the method is not allowed on this path.", {"Allow": {"required": True, "schema": {"type": "string"}}})
responses["Error409"] = err("ALREADY_EXISTS (a different upload is pending under this id; appealed before) or FAILED_PRECONDITION (not blocked; a user blocking or following themselves; no thread LLM configured).")
responses["Error413"] = err("INVALID_ARGUMENT: the body is over the limit.")
responses["Error500"] = err("INTERNAL: a provider the answer needs failed (HTTP error, timeout, an answer that breaks its schema); nothing half-made is returned.")
responses["Error429"] = err("RESOURCE_EXHAUSTED", {"Retry-After": {"required": True, "schema": {"type": "integer", "minimum": 1}}})
responses["CaptionError"] = {"description": "AUTH_001 (401), VAL_001 (400), METHOD_001 (405), RATE_001 (429), AI_001 (500).",
                             "content": {"application/json": {"schema": ref("CaptionError")}}}

doc = O()
doc["openapi"] = "3.1.0"
doc["info"] = {"title": "Sluice API", "version": "2.0.0", "description":
  "`sluice serve`: moderation results and moderation functions over the status store the daemon writes. Every endpoint except /healthz "
  "needs a credential: an app token (`X-App-Token` or `Authorization: Bearer`, optionally acting for `X-User-Id`) or an end user's JWT "
  "(`Authorization: Bearer`; HS256, or RS256/ES256 from a JWKS such as Firebase ID tokens; `sub` is the user id). Errors use "
  "`{\"error\": {\"status\", \"message\"}}`, except under /api/ where the Caption API envelope `{\"success\": false, \"error\": {\"code\", \"message\", \"timestamp\"}}` is used. "
  "Every GET path also answers HEAD (the GET's status and headers, Content-Length included, without the body). Custom formats: `sluice-image` (the bytes of a JPEG, PNG, WebP or GIF) and `sluice-image-base64` (such an image, base64)."}
doc["servers"] = [{"url": "http://127.0.0.1:8080"}]
doc["paths"] = paths
doc["components"] = {
  "securitySchemes": {"appToken": {"type": "apiKey", "in": "header", "name": "X-App-Token"},
                      "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "app token or JWT"}},
  "parameters": {"UserId": {"name": "X-User-Id", "in": "header", "required": False,
                 "description": "With an app token: the user the backend acts for (per-user limits, ownership): the request reads, erases, uploads and changes only what that user may (another user's item is NOT_FOUND to read, PERMISSION_DENIED to change); leave it out to act as the backend.",
                 "schema": {"type": "string", "pattern": ID}}},
  "responses": responses, "schemas": schemas}
print(json.dumps(doc, indent=2, ensure_ascii=True))
