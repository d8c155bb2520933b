import Foundation
import NIOCore
import SluiceCore

/// A callable function's `data`, decoded into a type; a missing or mistyped field gets the function's own
/// message for that field.
protocol CallableArguments: Decodable {
    static func problem(with field: String) -> String
    /// What `{"data": null}` or no `data` at all means (the Firebase SDK sends `call(nil)` as `{"data": null}`);
    /// nil when the function needs arguments.
    static var absent: Self? { get }
}

extension CallableArguments {
    static var absent: Self? { nil }
}

/// `{"data": {…}}`.
struct CallableRequest<Arguments: Decodable>: Decodable {
    var data: Arguments?
}

/// `{"result": {…}}`.
struct CallableResult<T: Encodable>: Encodable {
    var result: T
}

extension CallableArguments {
    /// The request body's `data`, or the envelope's message naming what was wrong.
    static func decode(_ body: ByteBuffer) throws -> Self {
        // No body at all is `{}`: no `data`.
        let json = body.readableBytes == 0 ? Data("{}".utf8) : Data(buffer: body)
        do {
            guard let data = try JSONDecoder().decode(CallableRequest<Self>.self, from: json).data ?? absent else {
                throw APIError(.invalidArgument, "missing \"data\" object")
            }
            // A function without arguments takes `{"data": null}`, `{"data": {}}`, `{}` or nothing: any other field is a
            // mistake (checked only for these, so the hot functions parse their body once).
            if absent != nil, let unknown = (((try? JSONSerialization.jsonObject(with: json)) as? [String: Any])?.keys.sorted())?.first(where: { $0 != "data" }) {
                throw APIError(.invalidArgument, "unknown field \(Identifiers.printable(unknown)): the body is {\"data\": null}, {\"data\": {}} or {}")
            }
            return data
        } catch let error as DecodingError {
            switch error {
            case let .keyNotFound(key, context) where context.codingPath.isEmpty && key.stringValue == "data":
                throw APIError(.invalidArgument, "missing \"data\" object")
            case let .keyNotFound(key, context):
                throw APIError(.invalidArgument, context.codingPath.isEmpty ? "missing \"data\" object" : problem(with: key.stringValue))
            case let .typeMismatch(_, context), let .valueNotFound(_, context), let .dataCorrupted(context):
                switch context.codingPath.count {
                case 0: throw APIError(.invalidArgument, bodyProblem(json))
                case 1: throw APIError(.invalidArgument, "\"data\" must be a JSON object")
                default: throw APIError(.invalidArgument, problem(with: context.codingPath[1].stringValue))
                }
            @unknown default:
                throw APIError(.invalidArgument, "body must be a JSON object {\"data\": {…}}")
            }
        }
    }

    /// Why a body the decoder refused as a whole was refused: not JSON at all, not an object, or (the decoder says
    /// "not valid JSON" for a number it cannot hold, such as 1.5 or 1e30 for an integer) the field with that number.
    static func bodyProblem(_ json: Data) -> String {
        switch JSONLine.object(json) {
        case let .failure(problem):
            return "body is \(problem.message): it must be a JSON object {\"data\": {…}}"
        case let .success(object):
            guard let data = object["data"] as? [String: Any] else { return "\"data\" must be a JSON object" }
            for (key, value) in data.sorted(by: { $0.key < $1.key }) {
                if let number = value as? NSNumber, !JSONLine.isBoolean(number),
                   number.doubleValue.rounded() != number.doubleValue || abs(number.doubleValue) > 9.0e15 {
                    return problem(with: key)
                }
            }
            return "body must be a JSON object {\"data\": {…}}"
        }
    }
}

/// `validate_text {text, context?}`.
struct ValidateTextArguments: CallableArguments {
    var text: String
    var context: String?

    static func problem(with field: String) -> String { "data.\(field) must be a string" }
}

/// `detectPriority {messageText, conversationContext?}`.
struct DetectPriorityArguments: CallableArguments {
    var messageText: String
    var conversationContext: String?

    static func problem(with field: String) -> String {
        field == "messageText" ? "data.messageText must be a non-empty string" : "data.\(field) must be a string"
    }
}

/// `submit_report {messageId, category, description?}`.
struct SubmitReportArguments: CallableArguments {
    var messageId: String
    var category: String
    var description: String?

    static func problem(with field: String) -> String {
        switch field {
        case "messageId": "data.messageId must be a string of 1-256 characters"
        case "category": "data.category must be one of \(Report.categories.joined(separator: ", "))"
        default: "data.\(field) must be a string"
        }
    }

    func validated() throws -> Self {
        // Characters are Unicode scalars, as JSON Schema's minLength/maxLength count them.
        guard (1...256).contains(messageId.unicodeScalars.count) else { throw APIError(.invalidArgument, Self.problem(with: "messageId")) }
        guard Report.categories.contains(category) else { throw APIError(.invalidArgument, Self.problem(with: "category")) }
        if let description, description.unicodeScalars.count > 1000 {
            throw APIError(.invalidArgument, "data.description is \(description.unicodeScalars.count) characters, over 1000")
        }
        try APIValidation.refuseNUL(messageId, "data.messageId")
        try APIValidation.refuseNUL(description, "data.description")
        return self
    }
}

/// Seed 004's `reportUser {reporterID, reportedID, reason}`: a report on a user.
struct ReportUserArguments: CallableArguments {
    var reporterID: String
    var reportedID: String
    var reason: String

    static func problem(with field: String) -> String {
        switch field {
        case "reason": "data.reason must be a string of 1-1000 characters"
        default: "data.\(field) must be a user id (1-128 letters, digits, '_' or '-')"
        }
    }

    func validated() throws -> Self {
        for (field, value) in [("reporterID", reporterID), ("reportedID", reportedID)] where Identifiers.problem(with: value, role: field) != nil {
            throw APIError(.invalidArgument, Self.problem(with: field))
        }
        guard (1...1000).contains(reason.unicodeScalars.count) else { throw APIError(.invalidArgument, Self.problem(with: "reason")) }
        try APIValidation.refuseNUL(reason, "data.reason")
        return self
    }
}

/// `deleteProfilePicture {userId}`: whose profile picture (users name themselves).
struct ProfilePictureArguments: CallableArguments {
    var userId: String
    static func problem(with field: String) -> String { "data.\(field) must be a string" }
}

/// Functions that take no arguments (`get_rate_limits`, `healthCheck`): `{}`, `null` or nothing.
struct NoArguments: CallableArguments {
    static func problem(with field: String) -> String { "data.\(field) is not expected: this function takes no arguments" }
    static var absent: NoArguments? { NoArguments() }

    init() {}

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: AnyKey.self)
        if let field = fields.allKeys.first {
            throw APIError(.invalidArgument, Self.problem(with: field.stringValue))
        }
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
