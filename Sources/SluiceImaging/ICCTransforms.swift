import CVipsShim

/// The shim's cache of ICC transforms from embedded profiles to sRGB (`icc.c`), owned by one `VipsImageProcessor`
/// and freed with it. Building a transform costs more than running it on a fitted photo, and uploads mostly carry
/// one of a few profiles, so each is built once per processor instead of once per upload.
///
/// The C cache locks itself and its transforms run on several threads at once, so it is shared as its address:
/// a plain value, turned back into the pointer only for the call that uses it.
final class ICCTransforms: Sendable {
    private let address: UInt

    init() {
        address = UInt(bitPattern: sluice_icc_cache_new())
    }

    /// The cache, for one call into the shim while this object is alive.
    var cache: OpaquePointer? { OpaquePointer(bitPattern: address) }

    deinit {
        sluice_icc_cache_free(OpaquePointer(bitPattern: address))
    }
}
