import Foundation
import SluiceCore

// The values handed from one image stage to the next:
// Upload → Sniffed → Bounded → Decoded → Classified → Judged → Written → Captioned.
// Each carries the one before it, so the last value of a run knows everything learned on the way, and each
// records its own part onto the item.

/// The bytes to judge: a pending upload, a stored original or approved output, or an image sent to the API.
public struct ImageUpload: ItemFacts {
    /// The item's image id; nil where there is no item (the caption API).
    public var image: ImageRef?
    public var bytes: Data
    /// SHA-256 of the bytes as uploaded (nil when the bytes are not the upload, e.g. a stored output).
    public var contentHash: String?

    public init(image: ImageRef?, bytes: Data, contentHash: String? = nil) {
        self.image = image
        self.bytes = bytes
        self.contentHash = contentHash
    }

    public func record(into item: inout Item, scope: RecordScope) {
        guard scope == .upload else { return }
        item.sourceBytes = bytes.count
        item.contentHash = contentHash
    }
}

/// The format, from magic bytes.
public struct Sniffed: ItemFacts {
    public var upload: ImageUpload
    public var format: ImageFormat

    public func record(into item: inout Item, scope: RecordScope) {
        upload.record(into: &item, scope: scope)
        if scope == .upload { item.format = format.rawValue }
    }
}

/// The header read and every limit checked, before any pixel is decoded.
public struct Bounded: ItemFacts {
    public var sniffed: Sniffed
    public var header: ImageHeader
    public var upload: ImageUpload { sniffed.upload }

    public func record(into item: inout Item, scope: RecordScope) {
        sniffed.record(into: &item, scope: scope)
        guard scope == .upload else { return }
        item.width = header.width
        item.height = header.height
    }
}

/// The one decode: the classifier JPEG and both metadata-free outputs, and what EXIF carried.
public struct Decoded: ItemFacts {
    public var bounded: Bounded
    public var image: ProcessedImage
    public var upload: ImageUpload { bounded.upload }

    public func record(into item: inout Item, scope: RecordScope) {
        bounded.record(into: &item, scope: scope)
        switch scope {
        case .upload:
            item.pdq = image.pdq
            item.exif = image.exif
            item.width = image.width
            item.height = image.height
        case .rejudge:
            // The upload's own hash stays; a stored output's (re-encoded) hash only fills a missing one.
            if item.pdq == nil { item.pdq = image.pdq }
            if item.exif == nil { item.exif = image.exif }
        }
    }
}

/// The banks consulted: the PDQ hash's verdict (nil when no matcher runs: the caption API, `--stages` without
/// `match` in reprocessing keeps the stored match).
public struct Matched: ItemFacts {
    public var decoded: Decoded
    public var verdict: BankVerdict?
    public var upload: ImageUpload { decoded.upload }

    public var match: BankMatch? {
        switch verdict {
        case let .act(match)?: match
        case let .classify(match)?: match
        case .reuse?, nil: nil
        }
    }

    public func record(into item: inout Item, scope: RecordScope) {
        decoded.record(into: &item, scope: scope)
        guard let verdict else { return }
        item.match = match
        if case let .reuse(_, _, reused) = verdict { item.reused = reused } else { item.reused = nil }
    }
}

/// SafeSearch likelihoods: fresh from the provider (or taken over from a near-identical approved image), or as
/// stored when classification does not run again.
public struct Classified: ItemFacts {
    public var matched: Matched
    public var safeSearch: SafeSearch?
    public var provider: String?
    /// False when the stored classification was passed on (the stage did not run).
    public var fresh: Bool
    public var decoded: Decoded { matched.decoded }
    public var upload: ImageUpload { decoded.upload }

    public func record(into item: inout Item, scope: RecordScope) {
        matched.record(into: &item, scope: scope)
        guard fresh, let safeSearch else { return }
        item.safeSearch = safeSearch
        item.provider = provider
    }
}

/// Approved: by the policy, or by a person (then with the reason naming them).
public struct Judged: ItemFacts {
    public var classified: Classified
    public var reason: String?
    public var decoded: Decoded { classified.decoded }

    public func record(into item: inout Item, scope: RecordScope) {
        classified.record(into: &item, scope: scope)
        item.status = .approved
        item.reason = reason
    }
}

/// The approved image and thumbnail in place (temp → fsync → rename).
public struct Written: ItemFacts {
    public var judged: Judged
    public var outputs: ItemOutputs

    public func record(into item: inout Item, scope: RecordScope) {
        judged.record(into: &item, scope: scope)
        item.outputs = outputs
        item.original = nil
    }
}

/// Something a caption can be made of: the classifier JPEG (small, metadata-free) of one decode.
public protocol CaptionSubject: ItemFacts {
    var captionJPEG: Data { get }
}

extension Decoded: CaptionSubject {
    public var captionJPEG: Data { image.classifyJPEG }
}

extension Written: CaptionSubject {
    public var captionJPEG: Data { judged.decoded.image.classifyJPEG }
}
