import Foundation

/// The seed Caption Generation API's client models (seed 002, "Data Models"), written to its documentation: if
/// these cannot decode an answer, the seed iOS app cannot either.
enum SeedCaptionModels {
    struct CaptionResponse: Codable {
        let success: Bool
        let data: CaptionData
        let metadata: ResponseMetadata
    }

    struct CaptionData: Codable {
        let caption: String
        let provider: String
        let model: String
        let confidence: String
        let usage: TokenUsage?
        let processingTime: String
        let requestId: String
    }

    struct TokenUsage: Codable {
        let promptTokens: Int
        let completionTokens: Int
        let totalTokens: Int

        enum CodingKeys: String, CodingKey {
            case promptTokens = "prompt_tokens"
            case completionTokens = "completion_tokens"
            case totalTokens = "total_tokens"
        }
    }

    struct ResponseMetadata: Codable {
        let timestamp: String
        let provider: String
        let requestId: String
        let processingTime: Int
        let imageSize: Int
        let mimeType: String
    }

    struct ErrorResponse: Codable {
        let success: Bool
        let error: APIErrorDetail
    }

    struct APIErrorDetail: Codable {
        let code: String
        let message: String
        let timestamp: String
    }
}
