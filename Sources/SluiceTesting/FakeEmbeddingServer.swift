import Foundation

/// An OpenAI-embeddings stand-in on loopback: checks the request shape (`POST /v1/embeddings`, `model`, `input`
/// as an array of strings, `encoding_format: float`) and answers a bag-of-words vector per input (each lower-cased
/// word, with synonyms folded by `synonyms`, adds 1 to one of `dimensions` slots), so texts sharing words — or
/// words the test declares synonyms — are near. Malformed requests get OpenAI's 400 envelope.
public enum FakeEmbeddingServer {
    public static func start(dimensions: Int = 64, synonyms: [String: String] = [:],
                             reply: (@Sendable (FakeJSONServer.Received, Int) -> FakeJSONServer.Reply?)? = nil) async throws -> FakeJSONServer {
        try await FakeJSONServer.start { received, index in
            if let reply, let custom = reply(received, index) { return custom }
            guard received.method == "POST", received.path == "/v1/embeddings" else {
                return .init(status: 404, body: #"{"error":{"message":"unknown path","type":"invalid_request_error"}}"#)
            }
            guard let json = received.json, json["model"] is String, json["encoding_format"] as? String == "float",
                  let inputs = json["input"] as? [String], !inputs.isEmpty else {
                return .init(status: 400, body: #"{"error":{"message":"bad request shape","type":"invalid_request_error"}}"#)
            }
            let data = inputs.enumerated().map { index, text -> [String: Any] in
                ["object": "embedding", "index": index, "embedding": vector(text, dimensions: dimensions, synonyms: synonyms)]
            }
            let body = (try? JSONSerialization.data(withJSONObject: ["object": "list", "data": data, "model": json["model"] ?? "",
                                                                     "usage": ["prompt_tokens": 1, "total_tokens": 1]])) ?? Data()
            return .init(bytes: body, headers: ["content-type": "application/json"])
        }
    }

    public static func vector(_ text: String, dimensions: Int, synonyms: [String: String]) -> [Double] {
        var vector = [Double](repeating: 0, count: dimensions)
        vector[dimensions - 1] = 0.05  // never all zero
        for word in text.lowercased().split(whereSeparator: { !$0.isLetter && !$0.isNumber }) {
            let folded = synonyms[String(word)] ?? String(word)
            let slot = folded.unicodeScalars.reduce(UInt32(2166136261)) { ($0 ^ $1.value) &* 16777619 }
            vector[Int(slot % UInt32(dimensions - 1))] += 1
        }
        return vector
    }
}
