"""The models of testsuite/lit/ocannl-train, for oracle.py: per model its synthetic data
(generated here, deterministically), the index symbols and learning rate of each training
step, a PyTorch replica of its loss, and the check of its short training run.

Shapes: a tdsl tensor is stored batch axes, then output axes, then input axes (row-major
within each); a parameter `i->o` is the matrix [o, i] of torch.nn.Linear. The replicas
index the arrays the same way. PyTorch is imported by load_torch(), only for the modes
that need it (writing the data does not)."""
import math

import numpy as np

torch = F = MaxPoolTies = None


def load_torch():
    global torch, F, MaxPoolTies
    import torch as t
    import torch.nn.functional as f
    torch, F = t, f

    class MaxPoolTiesFn(torch.autograd.Function):
        """A valid 2x2 max-pool of stride 2 whose gradient goes to every position equal to
        the window's maximum (tdsl(7): "With max accumulation (@^^, @^+, max pooling),
        every position equal to the maximum receives the gradient", as OCANNL); torch's
        max_pool2d gives it to one of them. Rings and glyphs drawn on a grid repeat 5x5
        patches, so equal maxima occur in these tests."""

        @staticmethod
        def forward(ctx, x):
            y = F.max_pool2d(x, 2, 2)
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            up = lambda a: a.repeat_interleave(2, -2).repeat_interleave(2, -1)
            h, w = y.shape[-2] * 2, y.shape[-1] * 2
            gx = torch.zeros_like(x)
            gx[..., :h, :w] = (x[..., :h, :w] == up(y)).to(g.dtype) * up(g)
            return gx

    MaxPoolTies = MaxPoolTiesFn


class Spec:
    seed = 0
    weight_decay = 0.0
    routine = "train_step"
    loss = "batch_loss"
    oracle_steps = 4

    def indices(self, k):
        return {}

    def feed(self, k):
        """Host tensors written before step k (beyond data(), written once)."""
        return {}


def mean_over(losses, n):
    return float(np.mean(losses[:n])), float(np.mean(losses[-n:]))


# ---------------------------------------------------------------- moons_demo_mini


def half_moons(n, noise, seed):
    """Two interleaved half-moons (as scikit-learn's make_moons, and OCANNL's
    Datasets.Half_moons): points of the upper moon get class 1, of the lower -1."""
    rng = np.random.default_rng(seed)
    t = np.pi * rng.random(n)
    upper = np.arange(n) % 2 == 0
    x = np.where(upper, np.cos(t), 1 - np.cos(t)) + noise * rng.uniform(-1, 1, n)
    y = np.where(upper, np.sin(t), 0.5 - np.sin(t)) + noise * rng.uniform(-1, 1, n)
    return np.stack([x, y], 1), np.where(upper, 1.0, -1.0)


class MoonsMini(Spec):
    """moons_demo_mini.ml: w2 * relu(b1 + w1 x), margin loss, SGD with weight decay 1e-4
    and the learning rate 0.1 * (2 * steps - step) / steps over one epoch of 80 batches."""

    params = ["w1", "b1", "w2"]
    loss = "scalar_loss"
    weight_decay = 0.0001
    n_batches, batch = 80, 10
    train_steps = 80
    oracle_steps = 5

    def data(self):
        xy, cls = half_moons(self.n_batches * self.batch, 0.1, 1)
        return {"moons_flat": xy.reshape(self.n_batches, self.batch, 2),
                "moons_classes": cls.reshape(self.n_batches, self.batch, 1)}

    def indices(self, k):
        return {"batch_n": k % self.n_batches, "step_n": k}

    def lr(self, k):
        return 0.1 * (2 * 80 - k) / 80

    def torch_loss(self, P, D, idx):
        b = idx["batch_n"]
        x, y = D["moons_flat"][b], D["moons_classes"][b]
        out = F.relu(x @ P["w1"].T + P["b1"]) @ P["w2"].T
        return F.relu(1 - y * out).sum() / self.batch

    def check_training(self, losses, m):
        first, last = mean_over(losses, 20)
        xy = np.asarray(m["moons_flat"]).reshape(-1, 2)
        cls = np.asarray(m["moons_classes"]).reshape(-1)
        correct = 0
        for p, c in zip(xy, cls):
            m["point"] = p
            m.call("infer")
            correct += (float(m["mlp_result"][0]) >= 0) == (c > 0)
        acc = correct / len(cls)
        return (last < 0.5 * first and acc > 0.8,
                "margin loss over the first 20 steps %.3f, the last 20 %.3f; training accuracy %.2f" % (first, last, acc))


# ---------------------------------------------------------------- LeNet (circles, mnist, cifar)


def lenet_torch(P, x, prefix="lenet."):
    """Nn_blocks.lenet: two padded 5x5 convolutions with a bias per output cell (OCANNL's
    `{ bias = 0. }` takes the whole output shape), each followed by relu and a valid 2x2
    max-pool of stride 2, then two relu layers of 120 and 84 units and a linear layer.
    x: (batch, height, width, channels); a kernel `kh, kw, ic -> oc` is [oc, kh, kw, ic]."""
    h = x.permute(0, 3, 1, 2)
    for c in ("conv1", "conv2"):
        k = P[c + ".kernel"]
        w = k.permute(0, 3, 1, 2)
        pad = (w.shape[2] - 1) // 2
        h = F.conv2d(h, w, padding=pad) + P[c + ".bias"].permute(2, 0, 1)
        h = MaxPoolTies.apply(F.relu(h))
    h = h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)
    for f in ("fc1", "fc2"):
        w = P[f + ".w"]
        h = F.relu(h @ w.reshape(w.shape[0], -1).T + P[f + ".b"])
    return h @ P[prefix + "w_logits"].T + P[prefix + "b_logits"]


LENET_PARAMS = ["conv1.kernel", "conv1.bias", "conv2.kernel", "conv2.bias", "fc1.w", "fc1.b", "fc2.w", "fc2.b",
                "lenet.w_logits", "lenet.b_logits"]


def circles(n, size, seed):
    """OCANNL's Datasets.Circles, approximately: size x size images of 1 to 3 circle
    outlines (radius 2 to 4, inside the image, overlaps allowed); the class is the count
    minus 1."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size]
    imgs = np.zeros((n, size, size, 1))
    cls = rng.integers(0, 3, n)
    for i in range(n):
        for _ in range(cls[i] + 1):
            r = rng.uniform(2, 4)
            cy, cx = rng.uniform(r, size - 1 - r, 2)
            ring = np.abs(np.hypot(yy - cy, xx - cx) - r) < 0.6
            imgs[i, :, :, 0] = np.maximum(imgs[i, :, :, 0], ring)
    return imgs, np.eye(3)[cls]


class CirclesConv(Spec):
    """circles_conv.ml with the LeNet it means to train (OCANNL falls back to an MLP): 160
    16x16 images in 20 batches of 8, cross-entropy through softmax, learning rate
    0.1 * (2 * steps - step) / steps over 10 epochs, of which the training run takes 5."""

    params = LENET_PARAMS
    n_batches, batch = 20, 8
    train_steps = 100

    def data(self):
        imgs, labels = circles(self.n_batches * self.batch, 16, 42)
        return {"images": imgs.reshape(self.n_batches, self.batch, 16, 16, 1),
                "labels": labels.reshape(self.n_batches, self.batch, 3)}

    def indices(self, k):
        return {"batch_n": k % self.n_batches, "step_n": k}

    def lr(self, k):
        return 0.1 * (2 * 200 - k) / 200

    def torch_loss(self, P, D, idx):
        b = idx["batch_n"]
        probs = torch.softmax(lenet_torch(P, D["images"][b]), -1)
        return -torch.log((probs * D["labels"][b]).sum(-1)).sum() / self.batch

    def check_training(self, losses, m):
        first, last = float(np.mean(losses[:20])), float(np.mean(losses[-20:]))
        return (last < 0.8 * first,
                "cross-entropy over the first epoch %.3f, the last %.3f" % (first, last))


SEGMENTS = {0: "abcdef", 1: "bc", 2: "abged", 3: "abgcd", 4: "fgbc", 5: "afgcd", 6: "afgedc", 7: "abc",
            8: "abcdefg", 9: "abcdfg"}


def seven_segment_digits(n, seed):
    """MNIST stand-in: 28x28 seven-segment digits (10 x 18 glyph, stroke 2) at a random
    place, random intensity and uniform noise, in [0, 1]."""
    rng = np.random.default_rng(seed)
    imgs = np.zeros((n, 28, 28, 1))
    cls = rng.integers(0, 10, n)
    for i in range(n):
        g = np.zeros((18, 10))
        for sgm in SEGMENTS[cls[i]]:
            if sgm == "a": g[0:2, :] = 1
            if sgm == "g": g[8:10, :] = 1
            if sgm == "d": g[16:18, :] = 1
            if sgm == "f": g[0:10, 0:2] = 1
            if sgm == "b": g[0:10, 8:10] = 1
            if sgm == "e": g[8:18, 0:2] = 1
            if sgm == "c": g[8:18, 8:10] = 1
        y0, x0 = rng.integers(2, 9), rng.integers(2, 17)
        imgs[i, y0:y0 + 18, x0:x0 + 10, 0] = g * rng.uniform(0.7, 1.0)
        imgs[i, :, :, 0] = np.clip(imgs[i, :, :, 0] + rng.uniform(0, 0.2, (28, 28)), 0, 1)
    return imgs, cls


def color_shapes(n, seed):
    """CIFAR stand-in: 32x32 RGB images of one of 5 shapes (disc, square, horizontal bars,
    vertical bars, cross) in a reddish or a bluish colour over a noisy background, class =
    shape * 2 + colour, centered to [-0.5, 0.5] as Conv_data.cifar_images_to_float32."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:32, 0:32]
    imgs = np.zeros((n, 32, 32, 3))
    cls = rng.integers(0, 10, n)
    for i in range(n):
        shape, colour = divmod(int(cls[i]), 2)
        cy, cx = rng.uniform(10, 22, 2)
        r = rng.uniform(5, 8)
        if shape == 0: mask = np.hypot(yy - cy, xx - cx) < r
        elif shape == 1: mask = (np.abs(yy - cy) < r) & (np.abs(xx - cx) < r)
        elif shape == 2: mask = (np.abs(xx - cx) < r) & (np.abs(yy - cy) < r) & ((yy // 3) % 2 == 0)
        elif shape == 3: mask = (np.abs(xx - cx) < r) & (np.abs(yy - cy) < r) & ((xx // 3) % 2 == 0)
        else: mask = ((np.abs(yy - cy) < 2) & (np.abs(xx - cx) < r)) | ((np.abs(xx - cx) < 2) & (np.abs(yy - cy) < r))
        fg = np.array([0.9, 0.3, 0.2]) if colour == 0 else np.array([0.2, 0.3, 0.9])
        img = rng.uniform(0.2, 0.6, (32, 32, 3))
        img[mask] = fg + rng.uniform(-0.1, 0.1, 3)
        imgs[i] = img
    return imgs - 0.5, cls


class LenetClassifier(Spec):
    """mnist_conv.ml / cifar_conv.ml: LeNet (6 and 16 channels), softmax cross-entropy with
    log (p + 1e-7), learning rate 0.1 * (1.2 * steps - step) / steps (OCANNL: 0.01 over
    4000 steps), then a forward-only evaluation on held-out batches through the same
    parameters (OCANNL's eval routine)."""

    params = LENET_PARAMS
    n_batches, batch, n_test_batches = 10, 10, 5
    epochs = 6
    train_steps = 60
    oracle_steps = 3

    def data(self):
        n = (self.n_batches + self.n_test_batches) * self.batch
        imgs, cls = self.generate(n, 7)
        h, w, c = imgs.shape[1:]
        k = self.n_batches * self.batch
        self.test_classes = cls[k:]
        return {"images": imgs[:k].reshape(self.n_batches, self.batch, h, w, c),
                "labels": np.eye(10)[cls[:k]].reshape(self.n_batches, self.batch, 10),
                "test_images": imgs[k:].reshape(self.n_test_batches, self.batch, h, w, c)}

    def indices(self, k):
        return {"batch_n": k % self.n_batches, "step_n": k}

    def lr(self, k):
        steps = self.epochs * self.n_batches
        return 0.1 * (1.2 * steps - k) / steps

    def torch_loss(self, P, D, idx):
        b = idx["batch_n"]
        probs = torch.softmax(lenet_torch(P, D["images"][b]), -1)
        return -torch.log((probs * D["labels"][b]).sum(-1) + 1e-7).sum() / self.batch

    def check_training(self, losses, m):
        first, last = float(np.mean(losses[:self.n_batches])), float(np.mean(losses[-self.n_batches:]))
        correct = 0
        for b in range(self.n_test_batches):
            m.set_index("eval_batch_n", b)
            m.call("eval_step")
            pred = np.argmax(np.asarray(m["eval_probs"]), -1)
            correct += int(np.sum(pred == self.test_classes[b * self.batch:(b + 1) * self.batch]))
        acc = correct / (self.n_test_batches * self.batch)
        return (last < 0.8 * first and acc > 0.2,
                "cross-entropy over the first epoch %.3f, the last %.3f; held-out accuracy %.2f (chance 0.10)" % (first, last, acc))


class MnistConv(LenetClassifier):
    generate = staticmethod(seven_segment_digits)


class CifarConv(LenetClassifier):
    generate = staticmethod(color_shapes)


# ---------------------------------------------------------------- names (makemore)

# A short list of given names written for these tests (the stand-in for OCANNL's
# Dataprep.Names, 32033 names from makemore).
NAMES = """emma olivia ava isabella sophia mia charlotte amelia harper evelyn abigail emily
elizabeth mila ella avery sofia camila aria scarlett victoria madison luna grace chloe
penelope layla riley zoey nora lily eleanor hannah lillian addison aubrey ellie stella
natalie zoe leah hazel violet aurora savannah audrey brooklyn bella claire skylar lucy
liam noah william james oliver benjamin elijah lucas mason logan alexander ethan jacob
michael daniel henry jackson sebastian aiden matthew samuel david joseph carter owen wyatt
john jack luke jayden dylan grayson levi isaac gabriel julian mateo anthony""".split()

VOCAB = 28  # '.' (start and end), ' ' (padding), 'a'..'z', as Dataprep.Names.dict_size


def char_index(c):
    return 0 if c == "." else 1 if c == " " else 2 + ord(c) - ord("a")


def bigrams():
    """Every (previous, next) character pair of ".name.", as Names.get_all_bigrams."""
    pairs = []
    for name in NAMES:
        s = "." + name + "."
        pairs += [(char_index(a), char_index(b)) for a, b in zip(s, s[1:])]
    return pairs


def names_cross_entropy(logits, targets, stable):
    """OCANNL's softmax cross-entropy over the last axis, summed over the token axes."""
    if stable:
        return -(targets * torch.log_softmax(logits, -1)).sum(-1)
    counts = torch.exp(logits)
    return -torch.log((counts / counts.sum(-1, keepdim=True) * targets).sum(-1))


class Bigram(Spec):
    """bigram.ml: probs = normalized exp ((w + 1) * one_hot(prev)), loss = mean over the
    batch of -log probs[next], SGD with learning rate 1 (batches of 50, the bigram list
    rounded up to a multiple of 50 by repeating its head, as OCANNL)."""

    params = ["w"]
    batch = 50
    epochs = 10

    def data(self):
        pairs = bigrams()
        pairs = pairs[:self.batch - len(pairs) % self.batch] + pairs
        self.n_batches = len(pairs) // self.batch
        self.train_steps = self.epochs * self.n_batches
        eye = np.eye(VOCAB)
        a = np.array(pairs)
        return {"inputs": eye[a[:, 0]].reshape(self.n_batches, self.batch, VOCAB),
                "outputs": eye[a[:, 1]].reshape(self.n_batches, self.batch, VOCAB)}

    def indices(self, k):
        return {"batch_n": k % self.n_batches}

    def lr(self, k):
        return 1.0

    def logits(self, P, x):
        return x @ (P["w"] + 1).T

    def torch_loss(self, P, D, idx):
        b = idx["batch_n"]
        return names_cross_entropy(self.logits(P, D["inputs"][b]), D["outputs"][b], False).sum() / self.batch

    def check_training(self, losses, m):
        n = self.n_batches
        first, last = float(np.sum(losses[:n])), float(np.sum(losses[-n:]))
        # the model's inference routine: next-character probabilities after '.'
        m["cha"] = np.eye(VOCAB)[0]
        m.call("infer_step")
        p = np.asarray(m["infer_probs"], np.float64)
        return (last < 0.9 * first and last / n < math.log(VOCAB) and abs(p.sum() - 1) < 1e-4,
                "epoch loss (sum over %d batches) first %.3f, last %.3f; inference probabilities sum to %.6f"
                % (n, first, last, p.sum()))



class BigramMlp(Bigram):
    """bigram_mlp.ml: probs = normalized exp ((w2 + 1) * relu (b1 + w1 * one_hot(prev))),
    24 hidden units, learning rate 1.5 * (1.5 * steps - step) / steps."""

    params = ["w1", "b1", "w2"]

    def lr(self, k):
        steps = self.epochs * self.n_batches
        return 1.5 * (1.5 * steps - k) / steps

    def indices(self, k):
        return {"batch_n": k % self.n_batches, "step_n": k}

    def logits(self, P, x):
        return F.relu(x @ P["w1"].T + P["b1"]) @ (P["w2"] + 1).T



def contexts(names, block):
    """(context, target) pairs of every name padded as '...name.' (name_to_contexts)."""
    xs, ys = [], []
    for name in names:
        s = "." * block + name + "."
        for i in range(len(s) - block):
            xs.append([char_index(c) for c in s[i:i + block]])
            ys.append(char_index(s[i + block]))
    return np.array(xs), np.array(ys)


class MlpBnNames(Spec):
    """mlp_bn_names.ml: per-position embeddings (10) of a 3-character context, the
    "bs|->e; |se->h => b|->h" contraction to 200 hidden units (w1 Kaiming-normal),
    batch_norm1d over the batch axis (biased variance, eps 1e-5, gamma 1, beta 0), tanh,
    logits, log-softmax cross-entropy, learning rate 0.1 * (1.5 * steps - step) / steps.
    The other parameters start in [-0.25, 0.25) (OCANNL recenters them after init)."""

    params = ["c", "w1", "b1", "bn1.gamma", "bn1.beta", "w2", "b2"]
    n_batches, batch, block = 5, 100, 3
    epochs = 12
    train_steps = 60

    def data(self):
        xs, ys = contexts(NAMES, self.block)
        k = self.n_batches * self.batch
        eye = np.eye(VOCAB)
        return {"contexts": eye[xs[:k]].reshape(self.n_batches, self.batch, self.block, VOCAB),
                "targets": eye[ys[:k]].reshape(self.n_batches, self.batch, VOCAB)}

    def indices(self, k):
        return {"batch_n": k % self.n_batches, "step_n": k}

    def lr(self, k):
        steps = self.epochs * self.n_batches
        return 0.1 * (1.5 * steps - k) / steps

    def torch_loss(self, P, D, idx):
        b = idx["batch_n"]
        x, y = D["contexts"][b], D["targets"][b]
        emb = x @ P["c"].T  # batch, block, embed
        pre = torch.einsum("bse,hse->bh", emb, P["w1"]) + P["b1"]
        mean = pre.mean(0, keepdim=True)
        var = ((pre - mean) ** 2).mean(0, keepdim=True)
        h = torch.tanh(P["bn1.gamma"] * (pre - mean) / torch.sqrt(var + 1e-5) + P["bn1.beta"])
        logits = h @ P["w2"].T + P["b2"]
        return names_cross_entropy(logits, y, True).sum() / self.batch

    def check_training(self, losses, m):
        first, last = mean_over(losses, self.n_batches)
        return (last < 0.85 * first and last < 2.8,
                "mean loss over the first epoch %.3f, the last %.3f (log 28 = %.3f)" % (first, last, math.log(VOCAB)))



# ---------------------------------------------------------------- decoder-only transformer


def decoder_torch(P, x, n_heads, d_k):
    """Inputs/transformer.tdsl: x (batch, seq, vocab) one-hot -> logits (batch, seq, vocab)."""
    emb = x @ P["model.w_embed"].T + P["model.pos_encoding"]
    q, k, v = (torch.einsum("bsi,hdi->bshd", emb, P["mha.w_" + n]) for n in "qkv")
    scores = torch.einsum("bshd,bthd->bsth", q, k) / math.sqrt(d_k)
    n = x.shape[1]
    mask = (torch.arange(n)[:, None] >= torch.arange(n)[None, :])[None, :, :, None]
    attn = torch.softmax(torch.where(mask, scores, torch.tensor(-1e9, dtype=scores.dtype)), 2)
    att = torch.einsum("bsth,bthe->bshe", attn, v)
    x1 = emb + torch.einsum("bshe,ohe->bso", att, P["mha.w_o"])
    x2 = x1 + F.relu(x1 @ P["ffn.w"].T + P["ffn.b"]) @ P["ffn.w_out"].T
    return x2 @ P["model.w_out"].T


DECODER_PARAMS = ["model.w_embed", "model.pos_encoding", "mha.w_q", "mha.w_k", "mha.w_v", "mha.w_o", "ffn.w",
                  "ffn.b", "ffn.w_out", "model.w_out"]

# A deterministic finite-state machine of 6 states over a binary input written for this
# test (OCANNL's has 8): next = TRANSITION[state][bit]; every state has two successors.
TRANSITION = [[1, 2], [3, 4], [5, 0], [0, 4], [2, 5], [1, 3]]


def fsm_sequences(n, length, seed):
    rng = np.random.default_rng(seed)
    seqs = np.zeros((n, length), int)
    for i in range(n):
        seqs[i, 0] = rng.integers(0, len(TRANSITION))
        for t in range(1, length):
            seqs[i, t] = TRANSITION[seqs[i, t - 1]][rng.integers(0, 2)]
    return seqs


class FsmTransformer(Spec):
    """fsm_transformer.ml: next-state prediction on sequences of 9 states (8 inputs, 8
    targets), batches of 16 written by the host before each step, loss
    -log (exp / sum exp) of the target per token (no max subtraction, as OCANNL), learning
    rate 1.0 * (1.5 * steps - step) / steps; then the forward-only inference routine on
    held-out sequences must predict a valid successor (one of two) for >= 90% of tokens."""

    params = DECODER_PARAMS
    n_batches, batch, seq = 8, 16, 8
    epochs = 10
    train_steps = 80
    states = 6

    def data(self):
        eye = np.eye(self.states)
        train = fsm_sequences(self.n_batches * self.batch, self.seq + 1, 42)
        self.inputs = eye[train[:, :-1]].reshape(self.n_batches, self.batch, self.seq, self.states)
        self.targets = eye[train[:, 1:]].reshape(self.n_batches, self.batch, self.seq, self.states)
        self.test = fsm_sequences(16, self.seq + 1, 99)[:, :-1]
        return {"infer_input": eye[self.test]}

    def feed(self, k):
        b = k % self.n_batches
        return {"input_batch": self.inputs[b], "target_batch": self.targets[b]}

    def indices(self, k):
        return {"step_n": k}

    def lr(self, k):
        steps = self.epochs * self.n_batches
        return 1.0 * (1.5 * steps - k) / steps

    def torch_loss(self, P, D, idx):
        logits = decoder_torch(P, D["input_batch"], 2, 8)
        return names_cross_entropy(logits, D["target_batch"], False).sum() / (self.batch * self.seq)

    def check_training(self, losses, m):
        first, last = mean_over(losses, self.n_batches)
        m.call("infer_step")
        pred = np.argmax(np.asarray(m["infer_logits"]), -1)
        valid = np.array([[p in TRANSITION[c] for p, c in zip(pr, cu)] for pr, cu in zip(pred, self.test)])
        acc = float(valid.mean())
        return (last < 0.7 * first and last < 1.0 and acc >= 0.9,
                "per-token loss over the first epoch %.3f, the last %.3f (log 6 = %.3f, optimum log 2 = %.3f); "
                "held-out valid-transition accuracy %.2f" % (first, last, math.log(6), math.log(2), acc))



class TransformerNames(Spec):
    """transformer_names.ml: next-character prediction on names written '.name.' padded
    with ' ' to 10 characters (9 inputs, 9 targets), batches of 16 written by the host,
    numerically stable log-softmax cross-entropy per token, learning rate
    0.5 * (1.5 * steps - step) / steps (OCANNL's 0.01 is for 10000 steps); then names are generated through the forward-only
    inference routine on a batch of one (sampled on the host: tdsl has no uniform_at)."""

    params = DECODER_PARAMS
    n_batches, batch, seq = 5, 16, 9
    epochs = 10
    train_steps = 50

    def data(self):
        eye = np.eye(VOCAB)
        idx = np.array([[char_index(c) for c in ("." + n + ".").ljust(self.seq + 1)[:self.seq + 1]] for n in NAMES])
        idx = idx[:self.n_batches * self.batch]
        self.inputs = eye[idx[:, :-1]].reshape(self.n_batches, self.batch, self.seq, VOCAB)
        self.targets = eye[idx[:, 1:]].reshape(self.n_batches, self.batch, self.seq, VOCAB)
        return {}

    def feed(self, k):
        b = k % self.n_batches
        return {"input_batch": self.inputs[b], "target_batch": self.targets[b]}

    def indices(self, k):
        return {"step_n": k}

    def lr(self, k):
        steps = self.epochs * self.n_batches
        return self.base_lr * (1.5 * steps - k) / steps

    base_lr = 0.5

    def torch_loss(self, P, D, idx):
        logits = decoder_torch(P, D["input_batch"], 2, 8)
        return names_cross_entropy(logits, D["target_batch"], True).sum() / (self.batch * self.seq)

    def check_training(self, losses, m):
        first, last = mean_over(losses, self.n_batches)
        rng = np.random.default_rng(5)
        names, finite = [], True
        for _ in range(3):
            ctx = [char_index(".")] + [char_index(" ")] * (self.seq - 1)
            for pos in range(1, self.seq):
                m["infer_input"] = np.eye(VOCAB)[ctx][None]
                m.call("infer_step")
                logits = np.asarray(m["infer_logits"], np.float64)[0, pos - 1]
                finite = finite and bool(np.all(np.isfinite(logits)))
                p = np.exp(logits - logits.max())
                c = int(rng.choice(VOCAB, p=p / p.sum()))
                if c == 0 and pos > 1:
                    break
                ctx[pos] = c
            names.append("".join("." if i == 0 else " " if i == 1 else chr(ord("a") + i - 2) for i in ctx[1:]).strip(" ."))
        return (last < 0.8 * first and last < 2.3 and finite,
                "per-token loss over the first epoch %.3f, the last %.3f (log 28 = %.3f); sampled: %s"
                % (first, last, math.log(VOCAB), ", ".join(names)))



class DataParallel(Spec):
    """data_parallel.ml's single-shard baseline: sum over the batch of (w x - y)^2 for
    the line y = 2x at x = 1..4, w from 0.5, SGD with learning rate 0.05 (the sharded
    routine is compared with it in the test itself)."""

    params = ["w_one"]
    model_params = ["w_one", "w_a", "w_b"]
    train_steps = 3

    def data(self):
        return {}

    def lr(self, k):
        return 0.05

    def torch_loss(self, P, D, idx):
        x = torch.tensor([[1.0], [2.0], [3.0], [4.0]], dtype=P["w_one"].dtype)
        return ((P["w_one"] * x - 2 * x) ** 2).sum()

    def check_training(self, losses, m):
        w = float(np.asarray(m["w_one"])[0])
        # (w - 2)^2 * 30 at w = 0.5, 5, -4; w - 0.05 * 60 (w - 2): 0.5 -> 5 -> -4 -> 14
        return (list(losses) == [67.5, 270.0, 1080.0] and w == 14.0,
                "losses %s, w %g (exactly 67.5, 270, 1080 and 14)" % (list(losses), w))


MODELS = {
    "moons_demo_mini": MoonsMini,
    "circles_conv": CirclesConv,
    "mnist_conv": MnistConv,
    "cifar_conv": CifarConv,
    "bigram": Bigram,
    "bigram_mlp": BigramMlp,
    "mlp_bn_names": MlpBnNames,
    "fsm_transformer": FsmTransformer,
    "transformer_names": TransformerNames,
    "data_parallel": DataParallel,
}
